"""Compares the outcomes of PyOpenCL's tests on PoCL with those through fedcl.

    pyopencl_compare.py RESULTS_DIR KNOWN_DIFFERENCES.txt POCL_FAILURES.txt TEST_FILE...

RESULTS_DIR holds pocl/FILE.log and fedcl/FILE.log, the output of `pytest -v FILE` on each platform.
Test ids are compared with the device and platform parts replaced, since they name the device.

Exits 1 when a test that passes on PoCL does not pass through fedcl (fails, errors, is skipped, or
never ran because the file hung or crashed) and KNOWN_DIFFERENCES.txt does not list it. Both lists
hold one test id or fnmatch pattern per line, then its reason; stale entries are reported."""
import fnmatch
import os
import re
import sys

RESULT = re.compile(r"^(\S+\.py::.+?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?:\s+\[\s*\d+%\])?\s*$")
STARTED = re.compile(r"^(\S+\.py::\S.*?) ?$")
DEVICE_PARTS = [
    (re.compile(r"<context factory for <pyopencl\.Device '[^']*' on '[^']*'>>"), "<ctx_factory>"),
    (re.compile(r"<pyopencl\.Device '[^']*' on '[^']*'>"), "<device>"),
    (re.compile(r"<pyopencl\.Platform '[^']*'>"), "<platform>"),
]
# pytest's outcomes, from best to worst; an id can report twice (a failure, then an error in teardown).
OUTCOMES = ["passed", "xfailed", "xpassed", "skipped", "failed", "error", "not run"]
OUTCOME_OF_WORD = {"PASSED": "passed", "XFAIL": "xfailed", "XPASS": "xpassed", "SKIPPED": "skipped",
                   "FAILED": "failed", "ERROR": "error"}
# An expected failure (xfail) is PyOpenCL saying the platform cannot pass the test: it sets no bar.
GOOD = {"passed", "xpassed"}
COLUMNS = [("passed", GOOD), ("failed", {"failed", "error", "not run"}), ("skipped", {"skipped"}),
           ("xfailed", {"xfailed"})]


def normalize(test_id):
    for pattern, replacement in DEVICE_PARTS:
        test_id = pattern.sub(replacement, test_id)
    return test_id


def parse_log(path):
    """{test id: outcome} and the id the run was in when it stopped, if it never finished it."""
    outcomes, unfinished, finished = {}, None, False
    if not os.path.exists(path):
        return outcomes, None
    with open(path, encoding="utf-8", errors="replace") as log:
        for line in log:
            line = line.rstrip("\n")
            match = RESULT.match(line)
            if match:
                test_id, outcome = normalize(match.group(1)), OUTCOME_OF_WORD[match.group(2)]
                previous = outcomes.get(test_id, outcome)
                outcomes[test_id] = max(previous, outcome, key=OUTCOMES.index)
                unfinished = None
            elif line.startswith("=") and "test session starts" not in line:
                finished = True  # the summary sections, which repeat test ids
            elif STARTED.match(line) and not finished:
                unfinished = normalize(line.strip())
    return outcomes, None if finished else unfinished


def parse_list(path):
    """[(pattern, reason)] from a file of `TEST_ID_OR_PATTERN  reason` lines."""
    entries = []
    with open(path, encoding="utf-8") as text:
        for number, line in enumerate(text, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split(None, 1)
            if len(fields) < 2:
                sys.exit(f"{path}:{number}: a test id needs a reason")
            entries.append((fields[0], fields[1]))
    return entries


def listed(entries, test_id):
    """The entry whose pattern matches test_id (ids contain '[', so patterns match it literally)."""
    for pattern, reason in entries:
        if fnmatch.fnmatchcase(test_id, pattern.replace("[", "[[]")):
            return pattern, reason
    return None


def count(outcomes, test_ids, wanted):
    return sum(1 for test_id in test_ids if outcomes.get(test_id, "not run") in wanted)


def main(results, known_path, pocl_failures_path, files):
    known, pocl_failures = parse_list(known_path), parse_list(pocl_failures_path)
    used_known, used_pocl, regressions = set(), set(), []
    rows = []
    totals = {"pocl": [0] * len(COLUMNS), "fedcl": [0] * len(COLUMNS)}
    for file in files:
        pocl, pocl_stop = parse_log(os.path.join(results, "pocl", file + ".log"))
        fedcl, fedcl_stop = parse_log(os.path.join(results, "fedcl", file + ".log"))
        if not pocl:
            print(f"FAIL: {file}: no test outcome on PoCL; see {results}/pocl/{file}.log")
            regressions.append(file)
            continue
        for name, stop in (("PoCL", pocl_stop), ("fedcl", fedcl_stop)):
            if stop:
                print(f"note     {file}: the {name} run stopped (hang, crash or timeout) in {stop}")
        test_ids = sorted(set(pocl) | set(fedcl))
        row = [file]
        for name, outcomes in (("pocl", pocl), ("fedcl", fedcl)):
            counts = [count(outcomes, test_ids, wanted) for _, wanted in COLUMNS]
            row += counts
            totals[name] = [a + b for a, b in zip(totals[name], counts)]
        rows.append(row)
        for test_id in test_ids:
            on_pocl, on_fedcl = pocl.get(test_id, "not run"), fedcl.get(test_id, "not run")
            if on_pocl not in GOOD and on_fedcl in GOOD:
                print(f"better   {test_id}: {on_pocl} on PoCL, {on_fedcl} through fedcl")
            if on_pocl not in GOOD:
                entry = listed(pocl_failures, test_id)
                if entry:
                    used_pocl.add(entry[0])
                if on_pocl not in ("skipped", "xfailed") and not entry:
                    print(f"note     fails on PoCL itself, not in the PoCL list: {test_id} ({on_pocl})")
                continue
            if on_fedcl in GOOD:
                continue
            entry = listed(known, test_id)
            if entry:
                used_known.add(entry[0])
                print(f"known    {test_id} ({on_fedcl}): {entry[1]}")
            else:
                regressions.append(test_id)
                print(f"REGRESS  {test_id}: {on_pocl} on PoCL, {on_fedcl} through fedcl")
    # Entries of the files that ran and matched nothing.
    for entries, used, what in ((known, used_known, "known difference no longer differs"),
                                (pocl_failures, used_pocl, "PoCL failure no longer fails on PoCL")):
        for pattern, _ in entries:
            if pattern not in used and pattern.split("::")[0] in files:
                print(f"stale    {what}: {pattern}")

    print()
    header = [f"{platform} {column}" for platform in ("PoCL", "fedcl") for column, _ in COLUMNS]
    print("| file | " + " | ".join(header) + " |")
    print("|---" * (len(header) + 1) + "|")
    for row in rows + [["total"] + totals["pocl"] + totals["fedcl"]]:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    print("(passed counts xpass; failed counts errors and tests a hang or crash kept from running)")
    print(f"{len(regressions)} unexplained regressions")
    return 1 if regressions else 0


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
