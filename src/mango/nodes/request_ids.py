"""Service requests made safe to resend: one execution per request id.

Fast DDS can drop a service's reply to a client the server has not finished discovering
(`mango.client.session.request_reply`). A client can only recover by sending the request again,
which is harmless for a query but not for "reset the scene": a late copy would reset an episode
the caller has begun. Requests that carry an id are therefore run once; every copy with the
same id gets the first one's reply, waiting for it while it is still being made.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

KEEP = 64  # replies remembered: a resend comes within seconds, long before 64 other requests


class OncePerRequestId:
    """Runs `make()` once per non-empty request id and hands every copy that reply."""

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._replies: OrderedDict[str, tuple[threading.Event, list[Any]]] = OrderedDict()

    def wrap(self, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """A service callback that runs `handler(request, response)` once per
        `request.request_id`."""
        return lambda request, response: self.reply(request.request_id,
                                                     lambda: handler(request, response))

    def reply(self, request_id: str, make: Callable[[], Any]) -> Any:
        """The reply to the request `request_id` ("" : no id, so `make()` runs every time)."""
        if not request_id:
            return make()
        with self._lock:
            entry = self._replies.get(request_id)
            first = entry is None
            if first:
                entry = self._replies[request_id] = (threading.Event(), [])
                while len(self._replies) > self._keep:
                    self._replies.popitem(last=False)
        done, box = entry
        if first:
            try:
                box.append(make())
            except BaseException as exc:
                with self._lock:  # nothing was answered: a later copy runs it again
                    self._replies.pop(request_id, None)
                box.append(exc)
                raise
            finally:
                done.set()
        done.wait()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]
