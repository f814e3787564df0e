"""One session's network: the Gate (policy, answers, limits, records) and the proxy commands
reach it through, started on first use and stopped with the session."""

from __future__ import annotations

import threading
from typing import Callable

from .gate import Asker, ConnectionRecord, Gate
from .policy import NetworkPolicy
from .proxy import Attachment, Proxy
from .resolve import Resolver


class Network:
    def __init__(self, policy: NetworkPolicy, resolver: Resolver | None = None,
                 on_record: Callable[[ConnectionRecord], None] | None = None):
        self.policy = policy
        self.gate = Gate(policy, resolver, on_record)
        self._proxy: Proxy | None = None
        self._lock = threading.Lock()

    def attach(self, origin: str, label: str, asker: Asker | None) -> Attachment:
        """A way out for one sandboxed command (give it to `Sandbox.wrapper(network=…)`)."""
        with self._lock:
            if self._proxy is None:
                self._proxy = Proxy(self.gate)
            proxy = self._proxy
        return proxy.attach(origin, label, asker)

    def listening(self) -> int:
        """Listeners still open for commands (0 when none is running)."""
        return self._proxy.listening() if self._proxy is not None else 0

    def close(self) -> None:
        with self._lock:
            proxy, self._proxy = self._proxy, None
        if proxy is not None:
            proxy.close()
        self.gate.close()
