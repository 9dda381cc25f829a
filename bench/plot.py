#!/usr/bin/python3
"""Draws one PNG from a fedcl_bench result file: blocking write and read time by size (log-log) and
the latency metrics as bars, each for the backend used directly, fedcl and the floor (the backend
plus the raw link's cost; bench/README.md).

    bench/plot.py RESULT_FILE [OUT.png]      (default: RESULT_FILE with .png for its suffix)

Exits 1, naming what is missing, when the file lacks the metrics the picture needs."""
import pathlib
import re
import sys

import matplotlib

matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt

SIDES = ("direct", "fedcl", "floor")
COLOURS = {"direct": "tab:blue", "fedcl": "tab:orange", "floor": "tab:green"}
US_PER_UNIT = {"us": 1.0, "ms": 1000.0}
BYTES_PER_SUFFIX = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
# The latency bars: metric and label; NBody steps are added for every size the file has.
LATENCIES = (("enqueue_finish.median", "enqueue+finish"), ("read.64B.time", "read 64 B"),
             ("create_release.median", "create+release"))


def read_results(path):
    """{metric: (value, unit)} from the 'metric value unit' lines ('#' lines are commentary), and the
    backend's device as the '# direct:' line names it."""
    results, device = {}, ""
    for line in path.read_text().splitlines():
        if line.startswith("# direct: "):
            device = line.rpartition(", device ")[2]
        fields = line.split()
        if line.startswith("#") or len(fields) != 3:
            continue
        try:
            results[fields[0]] = (float(fields[1]), fields[2])
        except ValueError:
            continue
    return results, device


def size_bytes(label):
    number, suffix = re.fullmatch(r"(\d+)([KMG]?i?B)", label).groups()
    return int(number) * BYTES_PER_SUFFIX[suffix]


def transfer_sizes(results):
    """The sizes with every time the picture draws, smallest first."""
    labels = {m.group(1) for m in map(re.compile(r"(?:read|write)\.([^.]+)\.time\.").match, results) if m}
    complete = [label for label in labels
                if all(f"{d}.{label}.time.{side}" in results for d in ("read", "write") for side in SIDES)]
    return sorted(complete, key=size_bytes)


def latency_metrics(results):
    nbody = sorted((int(m.group(1)) for m in map(re.compile(r"nbody\.(\d+)\.step\.direct$").match, results) if m))
    return list(LATENCIES) + [(f"nbody.{n}.step", f"NBody {n}") for n in nbody]


def missing_metrics(results, sizes, latencies):
    missing = [] if sizes else ["read.<size>.time and write.<size>.time (.direct, .fedcl, .floor) of any size"]
    if not any(metric.startswith("nbody.") for metric, _ in latencies):
        missing.append("nbody.<N>.step (.direct, .fedcl, .floor) of any N")
    missing += [f"{metric}.{side}" for metric, _ in latencies for side in SIDES if f"{metric}.{side}" not in results]
    return missing


def microseconds(results, name):
    value, unit = results[name]
    return value * US_PER_UNIT[unit]


def draw_transfers(axes, results, sizes, direction):
    x = [size_bytes(label) for label in sizes]
    for side in SIDES:
        y = [microseconds(results, f"{direction}.{label}.time.{side}") for label in sizes]
        axes.loglog(x, y, marker="o", color=COLOURS[side], label=side)
    axes.set_xticks(x, sizes, rotation=45)
    axes.minorticks_off()
    axes.set_title(f"blocking {direction}")
    axes.set_xlabel("bytes")
    axes.set_ylabel("time (µs)")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend()


def draw_latencies(axes, results, latencies):
    width = 0.27
    for k, side in enumerate(SIDES):
        heights = [microseconds(results, f"{metric}.{side}") for metric, _ in latencies]
        axes.bar([i + (k - 1) * width for i in range(len(latencies))], heights, width, color=COLOURS[side], label=side)
    axes.set_yscale("log")
    axes.set_xticks(range(len(latencies)), [label for _, label in latencies], rotation=30, ha="right")
    axes.set_title("latency (medians)")
    axes.set_ylabel("time (µs)")
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend()


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    source = pathlib.Path(argv[1])
    out = pathlib.Path(argv[2]) if len(argv) == 3 else source.with_suffix(".png")
    results, device = read_results(source)
    sizes, latencies = transfer_sizes(results), latency_metrics(results)
    missing = missing_metrics(results, sizes, latencies)
    if missing:
        print(f"plot.py: {source} lacks metrics the picture needs (a fedcl_bench result with floors): "
              + ", ".join(missing), file=sys.stderr)
        return 1

    figure, axes = plt.subplots(1, 3, figsize=(16, 5), constrained_layout=True)
    draw_transfers(axes[0], results, sizes, "write")
    draw_transfers(axes[1], results, sizes, "read")
    draw_latencies(axes[2], results, latencies)
    link = ""
    if "link.tcp_rtt.median" in results and "link.tcp_download" in results:
        link = (f"; raw TCP: RTT {results['link.tcp_rtt.median'][0]:.0f} µs, "
                f"{results['link.tcp_download'][0]:.0f} MiB/s down")
    figure.suptitle(f"fedcl against the backend used directly ({device or 'device unknown'}){link}; "
                    "floor = direct + raw link", fontsize=10)
    figure.savefig(out, dpi=110)
    print(f"plot.py: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
