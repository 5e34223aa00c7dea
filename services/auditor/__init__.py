"""The auditor: replays the topics and re-derives every decision (`fleetplace audit`, `explain`,
`what-if`, `export`). Pure over a `History` read once from the broker."""

from fleetplace.services.auditor.audit import audit, audit_topics
from fleetplace.services.auditor.history import History, HistoryError, read_history
from fleetplace.services.auditor.report import AuditReport, Mismatch

__all__ = ["AuditReport", "History", "HistoryError", "Mismatch", "audit", "audit_topics", "read_history"]
