"""Fleets of personas: :func:`audit` checks every persona under a prefix, here or on a cluster."""

from toolnexus.fleet.audit import audit
from toolnexus.fleet.cluster import dask_client
from toolnexus.fleet.results import AUDIT_ISSUES, AuditSummary, PersonaAudit

__all__ = ["AUDIT_ISSUES", "AuditSummary", "PersonaAudit", "audit", "dask_client"]
