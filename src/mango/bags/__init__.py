"""rosbag2-compatible MCAP bags without rosbag2: types, a crash-tolerant writer and reader.

Choice: the `mcap` library (Foxglove's reference implementation) writes the file, because the
recorder needs control over flushing so a SIGKILLed bag keeps everything written up to the
last flush; `rosbags` supplies the ROS 2 type system (message definitions and RIHS01 type
hashes for `metadata.yaml` version 9). Payloads are CDR bytes as DDS delivers them, so no
decode/encode happens while recording.

Above the files: `world_state_cdr` decodes `WorldState` payloads without rclpy, `states`
reads a bag's world states and episodes, `judge` re-judges a bag with an oracle (`mango
replay`). Nothing here imports rclpy or `mango.ros`.
"""

from mango.bags.reader import BagMessage, BagReader
from mango.bags.types import BagTypes
from mango.bags.writer import BagWriter

__all__ = ["BagMessage", "BagReader", "BagTypes", "BagWriter"]
