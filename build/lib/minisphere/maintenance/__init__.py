"""Maintenance: the scheduled staleness pass — one audited run per workspace and the skip rule
(`runs`), the control-plane rows it keeps (`ledger`), and the APScheduler wiring (`scheduler`).
Plain Python; the scheduled-tasks actor is its Ray shell."""
