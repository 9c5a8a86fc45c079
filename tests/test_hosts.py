"""Sites of held-out sources, matched by registrable domain (training/hosts.py), on small hand-made records."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from bodyblocks.config import DataConfig
from bodyblocks.training.data import held_out_sites
from bodyblocks.training.hosts import Unseen, link_domains, registrable, source_domains


def test_hosts_match_by_registrable_domain() -> None:
    assert registrable("news.bbc.co.uk") == registrable("bbc.co.uk") == "bbc.co.uk"
    assert registrable("online.wsj.com") == registrable("blogs.wsj.com") == "wsj.com"
    assert registrable("www.sina.com.cn") == "sina.com.cn" and registrable("Edition.CNN.com.") == "cnn.com"
    assert registrable("news.bbc.com") != registrable("bbc.co.uk")
    assert registrable("foo.blogspot.com") == registrable("bar.blogspot.com")  # one platform's templates: one site
    assert registrable("163") == "163" and registrable("192.168.1.4") == "192.168.1.4"  # a name, an address
    assert registrable("page:dragnet-R1") is None and registrable("") is None  # no host


def test_link_domains_are_the_domains_most_links_point_to() -> None:
    links = "".join(f'<a href="http://www{i % 2}.example.org/{i}">x</a>' for i in range(6))
    ads = "".join(f'<img src="http://ad.doubleclick.net/{i}">' for i in range(9))
    once = '<a href="http://elsewhere.net/">y</a>'
    assert link_domains(f"<html><body>{links}{ads}{once}</body></html>".encode()) == ["example.org"]
    assert link_domains(b"<p>no links</p>") == []


def _dataset(root: Path, name: str, pages: list[tuple[str | None, str]]) -> Path:
    folder = root / name
    (folder / "html").mkdir(parents=True)
    records = []
    for i, (url, html) in enumerate(pages):
        (folder / "html" / f"{i}.html.gz").write_bytes(gzip.compress(html.encode()))
        records.append({"id": f"{name}-{i}", "url": url, "lang": "en", "split": None, "html": f"html/{i}.html.gz",
                        "gold": None, "snippets": None, "page_type": None, "labels": None, "note": None})
    (folder / "pages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder


def test_a_held_out_source_keeps_its_sites_and_host_less_pages_out(tmp_path: Path) -> None:
    links = "".join(f'<a href="http://img{i}.example.org/{i}">x</a>' for i in range(4))  # no one host dominates
    canonical = '<html><head><link rel="canonical" href="http://online.wsj.com/a"></head><body>b</body></html>'
    _dataset(tmp_path, "held", [("http://news.bbc.co.uk/1", "<p>a</p>"), (None, canonical),
                                (None, f"<html><body>{links}</body></html>"), (None, "<p>nothing</p>")])
    domains, no_host, inferred = source_domains(tmp_path / "held")
    assert domains == {"bbc.co.uk", "wsj.com", "example.org"} and (no_host, inferred) == (2, 1)
    unseen = held_out_sites(DataConfig(root=str(tmp_path)), ["held"])
    assert unseen.active and unseen.no_host == {"held": 2} and unseen.inferred == {"held": 1}
    assert not unseen.keeps("bbc.co.uk") and not unseen.keeps("www.bbc.co.uk")
    assert not unseen.keeps("blogs.wsj.com") and not unseen.keeps("news.example.org")
    assert not unseen.keeps("page:other-3")  # no host: it cannot be shown to be of another site
    assert unseen.keeps("nytimes.com") and unseen.keeps("bbc.com")
    assert Unseen().keeps("page:x") and Unseen().keeps("bbc.co.uk")  # nothing held out: every page kept
    assert not held_out_sites(DataConfig(root=str(tmp_path)), []).active
