"""An rclpy `ActionClient` that may be created while its node is being spun.

rclpy (Kilted's wheel included) adds the client to the node's wait set before it creates
the lock the executor takes in `get_num_entities`; an executor spinning in another thread
can get there first, and its spin thread dies with an AttributeError, leaving every
future of that node unanswered (ros2/rclpy#1589, fixed upstream after this release).
"""

from __future__ import annotations

import threading
from typing import Any

from rclpy.action import ActionClient as _ActionClient


class ActionClient(_ActionClient):
    """`rclpy.action.ActionClient` with its lock created before the executor can see it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._lock = threading.Lock()
        super().__init__(*args, **kwargs)
