# The --json schema of framefs-frametest, checked key by key and type by type.
# usage: python3 schema.py FILE   (exit 0 when the document matches)
import json
import sys

NUM = (int, float)
OPT_NUM = (int, float, type(None))
PCTL = {k: NUM for k in ("min", "avg", "p50", "p90", "p99", "p99_9", "max")}
SCHEMA = {
    "tool": str, "version": str, "verdict": str, "pass": bool,
    "test": {
        "mode": str, "directory": str, "preset": str, "frame_bytes": int, "io_bytes": int,
        "frames": int, "loops": int, "threads": int, "streams": int, "fps": OPT_NUM,
        "fps_num": int, "fps_den": int, "queue": int, "prebuffer": int, "order": str,
        "single_file": bool, "empty": bool, "direct_io": bool, "verify": bool,
        "ios_per_frame": int, "files_per_dir": int, "io_size": int,
        "vary": (type(None), {"min_bytes": int, "max_bytes": int, "seed": int}),
    },
    "duration_s": NUM, "bytes": int,
    "bytes_per_frame": {"min": int, "max": int, "mean": NUM},
    "frames": {k: int for k in ("total", "transferred", "dropped", "late", "skipped",
                                "queue_full", "errors", "not_run", "verified",
                                "verify_failed")},
    "lateness_max_ms": NUM, "longest_drop_run": int, "lowest_fps_1s": OPT_NUM,
    "throughput": {"MB_s": NUM, "MiB_s": NUM, "fps": NUM},
    "fastest_frame_ms": NUM, "slowest_frame_ms": NUM,
    "windows": [{"window": str, "seconds": NUM, "frames": int, "open_ms": NUM, "io_ms": NUM,
                 "frame_ms": NUM, "MB_s": NUM, "MiB_s": NUM, "fps": NUM}],
    "times_ms": {k: PCTL for k in ("frame", "open", "io", "close")},
    "histogram": {"labels_ms": [str], "upper_edges_ms": [OPT_NUM], "counts": [int],
                  "window_s": OPT_NUM},
    "streams": [{"id": int, "pass": bool, "transferred": int, "dropped": int, "late": int,
                 "skipped": int, "queue_full": int, "errors": int, "verified": int,
                 "verify_failed": int, "lateness_max_ms": NUM, "longest_drop_run": int,
                 "lowest_fps_1s": OPT_NUM, "MB_s": NUM, "fps": NUM, "error": (str, type(None))}],
    "max_streams": (type(None), {"limit": int, "found": int,
                                 "trials": [{"streams": int, "pass": bool, "dropped": int,
                                             "verify_failed": int, "MB_s": NUM,
                                             "lowest_fps_1s": OPT_NUM}]}),
}


def check(value, schema, path):
    if isinstance(schema, tuple) and any(isinstance(s, (dict, list)) for s in schema):
        errors = [check(value, s, path) for s in schema]
        return next((e for e in errors if not e), errors[-1])
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        out = [f"{path}.{k}: missing" for k in schema if k not in value]
        out += [f"{path}.{k}: unexpected" for k in value if k not in schema]
        for k in schema:
            if k in value:
                out += check(value[k], schema[k], f"{path}.{k}")
        return out
    if isinstance(schema, list):
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        return [e for i, v in enumerate(value) for e in check(v, schema[0], f"{path}[{i}]")]
    # bool is an int in Python: keep them apart.
    if isinstance(value, bool) and schema is not bool and bool not in (schema if isinstance(schema, tuple) else (schema,)):
        return [f"{path}: bool where {schema} expected"]
    return [] if isinstance(value, schema) else [f"{path}: {type(value).__name__} is not {schema}"]


doc = json.load(open(sys.argv[1]))
problems = check(doc, SCHEMA, "$")
if len(doc["histogram"]["counts"]) != 14 or len(doc["windows"]) != 4:
    problems.append("histogram needs 14 buckets and 4 windows")
if doc["verdict"].split(":")[0] != ("PASS" if doc["pass"] else "FAIL"):
    problems.append("verdict and pass disagree")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
