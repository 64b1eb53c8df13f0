"""Perception: RGB-D frames -> detections of phrases with 3-D boxes in the world.

`base` is the contract (frames, detections, the backend protocol), `geometry` the pixel -> 3-D
functions every backend shares, `registry` the backends by name.
"""
