"""The auditor: replays the topics and re-derives every decision (`fleetplace audit`, `explain`,
`what-if`, `export`). Pure over a `History` read once from the broker."""

from fleetplace.services.auditor.audit import AuditReport, Mismatch, audit
from fleetplace.services.auditor.history import History, HistoryError, read_history

__all__ = ["AuditReport", "History", "HistoryError", "Mismatch", "audit", "read_history"]
