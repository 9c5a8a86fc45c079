"""Which pages share a site: hosts matched by registrable domain, for sources held out of training.

A page's site (datasets.site_of: its url host, else a host its source names, its canonical link, og:url or <base>,
or the host most of its links point to, else "page:ID") is matched by its registrable domain under the public suffix
list (the `publicsuffixlist` package, which ships the list; nothing is fetched): news.bbc.co.uk and bbc.co.uk are one
site, online.wsj.com and blogs.wsj.com too. Only the list's ICANN section is used, so that pages on a platform's
subdomains (foo.blogspot.com, bar.blogspot.com) count as one site: they share the platform's templates.

Held out (`Unseen`, made from the held-out sources' pages): every registrable domain of their pages, and for a
held-out page with no host ("page:ID") the domains its links mostly point to (link_domains). A page left out of
training or tuning by it: one of those domains, or one with no host at all (it cannot be shown to come from
another site).
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

NO_HOST = "page:"  # the prefix of datasets.site_of's key for a page with no host
_LINK = re.compile(rb"""(?:href|src)\s*=\s*["']?(https?://[^"'\s>/?#:]+)""", re.IGNORECASE)
MIN_LINKS = 3  # link_domains: a domain counts with this many links at least
MIN_SHARE = 0.1  # ... and this share of the counted links
TOP = 3  # ... and the TOP most linked only


@lru_cache(maxsize=1)
def _suffixes():  # type: ignore[no-untyped-def]
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList(only_icann=True)


@lru_cache(maxsize=65536)
def registrable(site: str | None) -> str | None:
    """The registrable domain of a site key or host (news.bbc.co.uk -> bbc.co.uk), the host itself for an IP
    address or a single label (a name a source gave, such as daniel's "163"), None for a page with no host."""
    if not site or site.startswith(NO_HOST):
        return None
    host = site.strip().lower().strip(".")
    host = host[4:] if host.startswith("www.") else host
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if "." not in host:
        return host or None
    return _suffixes().privatesuffix(host) or host


def link_domains(html: bytes) -> list[str]:
    """The registrable domains most of a page's absolute links and sources point to (at most TOP, each with
    MIN_LINKS links and MIN_SHARE of them at least), sharing and ad hosts (datasets.THIRD_PARTY_HOSTS) left out."""
    from bodyblocks.training.datasets import THIRD_PARTY_HOSTS

    counts: Counter[str] = Counter()
    for m in _LINK.finditer(html[:500_000]):
        host = m.group(1).decode("latin-1").lower()
        if not any(word in host for word in THIRD_PARTY_HOSTS) and (domain := registrable(host)):
            counts[domain] += 1
    total = sum(counts.values())
    return [d for d, n in counts.most_common(TOP) if n >= MIN_LINKS and n >= MIN_SHARE * total]


@dataclass
class Unseen:
    """The sites of held-out sources: `keeps(site)` says whether a page of that site may be trained or tuned on."""

    domains: set[str] = field(default_factory=set)
    active: bool = False  # False: nothing is held out, every page is kept
    no_host: dict[str, int] = field(default_factory=dict)  # per held-out source: its pages with no host
    inferred: dict[str, int] = field(default_factory=dict)  # ... of which the links gave a domain

    def keeps(self, site: str) -> bool:
        if not self.active:
            return True
        domain = registrable(site)
        return domain is not None and domain not in self.domains


def source_domains(folder: str | Path) -> tuple[set[str], int, int]:
    """The registrable domains of a dataset's pages (its pages with no host: their link_domains), with the count of
    pages with no host and of those whose links gave a domain."""
    return _source_domains(str(Path(folder).resolve()))


@lru_cache(maxsize=32)
def _source_domains(folder: str) -> tuple[set[str], int, int]:
    from bodyblocks.training.datasets import read_dataset, site_of

    domains: set[str] = set()
    no_host = inferred = 0
    for page in read_dataset(folder):
        domain = registrable(site_of(page))
        if domain is not None:
            domains.add(domain)
            continue
        no_host += 1
        found = link_domains(page.html) if isinstance(page.html, bytes) else []
        inferred += bool(found)
        domains.update(found)
    return domains, no_host, inferred


def unseen_sites(folders: Iterable[tuple[str, str | Path]]) -> Unseen:
    """Unseen of the held-out sources, (name, dataset folder) pairs; inactive when there are none."""
    out = Unseen()
    for name, folder in folders:
        domains, no_host, inferred = source_domains(folder)
        out.domains |= domains
        out.active = True
        out.no_host[name], out.inferred[name] = no_host, inferred
    return out
