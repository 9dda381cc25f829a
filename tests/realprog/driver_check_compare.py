"""Compares driver_check's output on a backend used directly with its output through fedcl.

    driver_check_compare.py BACKEND_OUT FEDCL_OUT ALLOWED

Every line must be equal, unless ALLOWED names the check with the value fedcl printed:

    VENDOR_SUBSTRING CHECK_NAME FEDCL_VALUE  reason...

VENDOR_SUBSTRING is `*` or a part of the `device.vendor:` line; CHECK_NAME is the check as printed
(section.check); FEDCL_VALUE is what fedcl must print, up to the first two spaces (it may hold
single spaces); the reason follows. Lines without a check name (kernel printf output) are compared
as they are.

Exits 1 on a difference no rule allows (each is printed), and lists rules of this vendor that
matched no difference (stale)."""
import difflib
import re
import sys


def parse_line(raw):
    """(check, value) of a "check: value" line; (raw, None) for other lines."""
    check, sep, value = raw.partition(": ")
    return (check, value) if sep and " " not in check else (raw, None)


def read_lines(path):
    with open(path, encoding="utf-8", errors="replace") as text:
        return text.read().splitlines()


def parse_rules(path):
    """[(vendor, check, value, reason)] from the allowed-differences file."""
    rules = []
    with open(path, encoding="utf-8") as text:
        for number, line in enumerate(text, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = line.split(None, 2)
            if len(fields) < 3:
                sys.exit(f"{path}:{number}: want VENDOR_SUBSTRING CHECK_NAME FEDCL_VALUE  reason")
            parts = re.split(r"\s{2,}|\t", fields[2].strip(), maxsplit=1)
            if len(parts) < 2:
                sys.exit(f"{path}:{number}: no reason after the value (two spaces separate them)")
            rules.append((fields[0], fields[1], parts[0], parts[1]))
    return rules


def vendor_of(lines):
    for raw in lines:
        check, value = parse_line(raw)
        if check == "device.vendor":
            return value
    return ""


def paired(backend, fedcl):
    """(backend line or None, fedcl line or None) for every line that is not the same in both."""
    matcher = difflib.SequenceMatcher(None, backend, fedcl, autojunk=False)
    for op, b1, b2, f1, f2 in matcher.get_opcodes():
        if op == "equal":
            continue
        left, right = backend[b1:b2], fedcl[f1:f2]
        # Lines of one check pair up; the rest stand alone.
        right_by_check = {}
        for raw in right:
            right_by_check.setdefault(parse_line(raw)[0], []).append(raw)
        for raw in left:
            match = right_by_check.get(parse_line(raw)[0])
            yield raw, match.pop(0) if match else None
        for rest in right_by_check.values():
            for raw in rest:
                yield None, raw


def main(backend_path, fedcl_path, rules_path):
    backend, fedcl, rules = read_lines(backend_path), read_lines(fedcl_path), parse_rules(rules_path)
    vendor = vendor_of(backend)
    ours = [rule for rule in rules if rule[0] == "*" or rule[0] in vendor]
    used, failures = set(), []
    for before, after in paired(backend, fedcl):
        if before is None or after is None:
            failures.append(f"only {'fedcl' if before is None else 'the backend'} prints {before or after!r}")
            continue
        check, expected = parse_line(before)
        actual = parse_line(after)[1]
        rule = next((r for r in ours if r[1] == check and r[2] == actual), None)
        if rule:
            used.add(rule)
            print(f"allowed  {check}: backend {expected}, fedcl {actual}: {rule[3]}")
        else:
            failures.append(f"{check}: backend {expected!r}, fedcl {actual!r}")
    for rule in ours:
        if rule not in used:
            print(f"stale    {rule[1]} ({rule[0]}): no such difference seen, the rule may go")
    for failure in failures:
        print(f"DIFFERS  {failure}")
    print(f"{len(backend)} lines compared (vendor {vendor!r}), {len(used)} allowed differences, "
          f"{len(failures)} unexplained")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
