"""Checks clpeak's XML dump: every test that was asked for reported, and every number is positive.
clpeak exits 0 even when it found no device or a test threw, so its exit status proves nothing.

    clpeak_check.py RESULTS.xml CLPEAK_TEST_OPTION...   (e.g. --global-bandwidth --compute-sp)

Prints the numbers as `test/measure value unit` lines."""
import sys
import xml.etree.ElementTree as ElementTree

# clpeak's test options and the element each one writes into the dump.
ELEMENT_OF_OPTION = {
    "--global-bandwidth": "global_memory_bandwidth",
    "--compute-sp": "single_precision_compute",
    "--compute-dp": "double_precision_compute",
    "--compute-integer": "integer_compute",
    "--compute-intfast": "integer_compute_fast",
    "--transfer-bandwidth": "transfer_bandwidth",
    "--kernel-latency": "kernel_launch_latency",
}


def measures(element):
    """(name, text) of the numbers under element: its leaves, or itself when it is one."""
    children = list(element)
    if not children:
        return [(element.tag, element.text)]
    return [(f"{element.tag}/{child.tag}", child.text) for child in children]


def main(path, options):
    devices = ElementTree.parse(path).getroot().findall("./platform/device")
    if len(devices) != 1:
        print(f"FAIL: clpeak reported {len(devices)} devices, want 1")
        return 1
    failures = 0
    for option in options:
        tag = ELEMENT_OF_OPTION.get(option)
        if tag is None:
            continue  # not a test option (-p, -d, ...)
        element = devices[0].find(tag)
        if element is None:
            print(f"FAIL: {option}: no {tag} in the results")
            failures += 1
            continue
        unit = element.get("unit", "")
        for name, text in measures(element):
            try:
                value = float(text)
            except (TypeError, ValueError):
                value = float("nan")
            ok = value > 0
            failures += not ok
            print(f"{'' if ok else 'FAIL: '}{name} {text} {unit}")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
