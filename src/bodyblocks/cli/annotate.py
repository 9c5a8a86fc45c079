"""Subcommand that makes labels by hand: annotate (annotate/)."""

from __future__ import annotations

import argparse
import sys


def add_annotate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("annotate", help="label a dataset's blocks body / not body in a local web page")
    p.add_argument("dataset", help="a dataset folder (pages.jsonl layout, or a folder of name.html pages)")
    p.add_argument("--labels", default=None, metavar="DIR",
                   help="where the labels go (default DATASET/annotations, and the derived gold text into the "
                        "dataset; with another folder the dataset is only read)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--model", default=None,
                   help="checkpoint whose P(body) and kept blocks start each page (default: the shipped ensemble)")
    p.add_argument("--no-model", action="store_true", help="start every page with no block labelled body")
    p.set_defaults(handler=_run_annotate)


def _run_annotate(args: argparse.Namespace) -> int:
    from bodyblocks.annotate.server import Annotator, make_server
    from bodyblocks.annotate.store import AnnotationStore

    store = AnnotationStore(args.dataset, args.labels)
    extractor = None
    if not args.no_model:
        from bodyblocks.loading.plan import load

        extractor = load(args.model)
    app = Annotator(store, extractor)
    try:
        server = make_server(app, args.host, args.port)
    except OSError as exc:
        raise OSError(f"cannot listen on {args.host}:{args.port} ({exc.strerror}): give another --port") from None
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"bodyblocks annotate: listening on {args.host}: anyone who can reach this machine can read the "
              "dataset's pages and, from the labelling page, write labels", file=sys.stderr)
    host, port = server.server_address[:2]
    done = sum(s["done"] for s in store.status())
    print(f"bodyblocks annotate: {store.dataset.name}, {len(store.ids())} pages ({done} done), labels in "
          f"{store.labels_dir}\n  open http://{'localhost' if host == '127.0.0.1' else host}:{port}/ "
          "(Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
