"""`segmentlog cluster`: the cluster as it stood, replayed from the KRaft metadata log of a data
directory (values/kafka_internal/metadata_image.py): its topics, configs and brokers, at the
log's end or `--at-offset N` / `--at-time T`, and each partition directory whose
`partition.metadata` topic id the metadata does not hold (a deleted topic's leftovers, a
`-delete` directory), named, never mixed in.

    segmentlog cluster DATA_DIR [--section topics|configs|brokers|directories] [--json]

Secrets (password-type configs, any config name Kafka does not know) print as (redacted).
"""

from __future__ import annotations

from datetime import timezone
import json

from ..errors import BadOptionError
from ..storage.io.filesystem import filesystem_for
from ..values import iso_time
from ..values.kafka_internal.cluster_state import ClusterState, cluster_state
from .tables import render_table

HELP = "the cluster as it stood (topics, configs, brokers) from a data directory's KRaft log"
SECTIONS = ("topics", "configs", "brokers", "directories")


def add_arguments(parser) -> None:
    parser.add_argument("path", metavar="DIR",
                        help="a data directory, or its __cluster_metadata-0 directory")
    at = parser.add_mutually_exclusive_group()
    at.add_argument("--at-offset", type=int, metavar="N",
                    help="the cluster after the metadata record at offset N")
    at.add_argument("--at-time", metavar="T",
                    help="the cluster at time T (ISO-8601 with a zone, or epoch ms)")
    parser.add_argument("--section", action="append", choices=SECTIONS, dest="sections",
                        help="only this section (repeatable; default: all)")
    parser.add_argument("--json", action="store_true", help="one JSON document")


def at_time_ms(text: str | None) -> int | None:
    if text is None:
        return None
    if text.strip().lstrip("-").isdigit():
        return int(text)
    try:
        moment = iso_time.parse(text)
    except ValueError as err:
        raise BadOptionError("--at-time", text, str(err)) from None
    if moment.tzinfo is None:
        raise BadOptionError("--at-time", text, "give a zone (Z or +HH:MM)")
    return int(moment.astimezone(timezone.utc).timestamp() * 1000)


def run(args) -> int:
    fs, path = filesystem_for(args.path, getattr(args, "store_config", None))
    state = cluster_state(fs, path, at_offset=args.at_offset, at_time=at_time_ms(args.at_time))
    sections = args.sections or list(SECTIONS)
    if args.json:
        doc = state.as_json()
        for name in SECTIONS:
            if name not in sections:
                doc.pop(name)
        print(json.dumps(doc, indent=1))
    else:
        print(render_text(state, sections), end="")
    return 0


def render_text(state: ClusterState, sections=SECTIONS) -> str:
    image = state.image
    out = [f"metadata: {state.metadata_dir}",
           f"replayed: {image.snapshot or 'no snapshot'}, then the log; through offset "
           f"{image.last_offset}"]
    if image.open_transaction is not None:
        out.append(f"not applied: the metadata transaction begun at offset "
                   f"{image.open_transaction} (not ended)")
    if image.features:
        out.append("features: " + ", ".join(f"{k}={v}" for k, v in sorted(image.features.items())))
    if "topics" in sections:
        rows = []
        for t in state.topics:
            parts = t["partitions"]
            if t["deleted"]:
                rows.append([t["topic"], t["topic_id"], "-", "-", "-", "deleted"])
                continue
            factors = sorted({len(p["replicas"]) for p in parts})
            offline = sum(p["leader"] < 0 for p in parts)
            under = sum(p["leader"] >= 0 and len(p["isr"]) < len(p["replicas"])
                        for p in parts)
            notes = [f"{offline} offline" if offline else "",
                     f"{under} under-replicated" if under else ""]
            rows.append([t["topic"], t["topic_id"], len(parts),
                         ",".join(map(str, factors)) or "-",
                         ",".join(map(str, sorted({r for p in parts for r in p["replicas"]})))
                         or "-", "; ".join(n for n in notes if n) or "-"])
        out += ["", f"topics ({sum(not t['deleted'] for t in state.topics)})",
                render_table(["topic", "topic id", "partitions", "replication", "brokers",
                              "state"], rows).rstrip("\n")]
    if "configs" in sections:
        rows = [[c["resource_type"], c["resource_name"] or "(cluster default)", c["name"],
                 c["value"]] for c in state.configs]
        out += ["", f"configs ({len(rows)})",
                render_table(["resource", "name", "config", "value"], rows).rstrip("\n")]
    if "brokers" in sections:
        rows = [[b["broker_id"], str(b["epoch"]), "fenced" if b["fenced"] else "unfenced",
                 b["rack"] or "-", " ".join(b["endpoints"])] for b in state.brokers]
        out += ["", f"brokers ({len(rows)})",
                render_table(["id", "epoch", "state", "rack", "endpoints"], rows).rstrip("\n")]
    if "directories" in sections:
        odd = state.unexpected_directories
        out += ["", f"partition directories: {len(state.directories)}, "
                    f"{len(odd)} not of a topic the metadata holds"]
        if odd:
            out.append(render_table(["directory", "topic id", "why"],
                                    [[d["directory"], d["topic_id"] or "-", d["status"]]
                                     for d in odd]).rstrip("\n"))
    return "\n".join(out) + "\n"
