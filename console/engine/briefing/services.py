"""The service an alert is about: read once, used by the verdict, the verification and the
postmortem form."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

# A service-like name: a hyphenated word ending in -service, -svc, -api (checkout-service,
# ledger-api), or the word after "service:" / "service=" / "(service …)".
_SERVICE_TOKEN = re.compile(r"(?<![\w.-])([a-z0-9][a-z0-9_]*(?:-[a-z0-9_]+)*-(?:service|svc|api))"
                            r"(?![\w-])", re.IGNORECASE)
_SERVICE_LABEL = re.compile(r"\bservice\s*[:=]\s*([a-z0-9][\w.-]*)|\(service\s+([a-z0-9][\w.-]*)\)",
                            re.IGNORECASE)


@dataclass(frozen=True)
class ServiceRead:
    """The service an alert names (a label, or its text) and whether the memory knows it."""

    named: str | None = None
    known: bool = False

    @property
    def demotes(self) -> bool:
        """Whether a strong match on another service is only "elsewhere"."""
        return self.named is not None


def known_service_in(text: str, services: Collection[str]) -> str | None:
    """The longest memory service the text names (any case; '-', '_' and ' ' count alike)."""
    found = []
    for service in services:
        parts = [re.escape(p) for p in re.split(r"[-_ ]+", service) if p]
        if len(parts) < 2 and not re.search(r"[-_]", service):
            # A one-word service ("payments") is also an ordinary word: only a label names it.
            pattern = r"(?<![\w-])" + re.escape(service) + r"(?=[-_ ](?:service|svc|api)\b)"
        else:
            pattern = r"(?<![\w-])" + r"[-_ ]".join(parts) + r"(?![\w-])"
        if parts and re.search(pattern, text, re.IGNORECASE):
            found.append(service)
    return max(found, key=len, default=None)


def read_service(text: str, label: str | None, services: Collection[str]) -> ServiceRead:
    """The alert's service: its payload label, else a memory service its text names, else a
    service-like name it spells out (``quokka-api``, ``service: quokka``), else none."""
    by_lower = {s.lower(): s for s in services}
    if label and label.strip():
        name = label.strip()
        return ServiceRead(by_lower.get(name.lower(), name), name.lower() in by_lower)
    known = known_service_in(text, services)
    if known is not None:
        return ServiceRead(known, True)
    spelled = [m.group(1) for m in _SERVICE_TOKEN.finditer(text)]
    spelled += [m.group(1) or m.group(2) for m in _SERVICE_LABEL.finditer(text)]
    if spelled:
        return ServiceRead(spelled[0].lower(), False)
    return ServiceRead()


__all__ = ["ServiceRead", "known_service_in", "read_service"]
