"""Cameras without ROS: frame sources (files, OpenCV, RealSense) and calibration files."""

from mango.camera.calibration import CameraCalibration, load_calibration
from mango.camera.fitting import FittedFrame, FrameFitter
from mango.camera.sources import SOURCES, FilesSource, Frame, FrameSource, open_source

__all__ = ["SOURCES", "CameraCalibration", "FilesSource", "FittedFrame", "Frame", "FrameFitter",
           "FrameSource", "load_calibration", "open_source"]
