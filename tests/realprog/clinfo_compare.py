"""Compares `clinfo --raw` of the PoCL platform with `clinfo --raw` of the fedcl platform that serves
the same device, property by property.

    clinfo_compare.py REFERENCE.raw FEDCL.raw ALLOWED_DIFFERENCES.txt [REFERENCE.txt FEDCL.txt]

Platform fields are not compared (fedcl is its own platform). Every device property and every
loader property must be equal, unless ALLOWED_DIFFERENCES.txt names the property with a rule:

    differs           any value
    absent            fedcl may leave the property out (clinfo prints nothing for a failed query)
    equals:VALUE      fedcl must report VALUE (one word, or nothing; a bitfield's flags joined by '|')
    extends           fedcl's value starts with the reference value (device names gain " @ node")
    drops:A,B,...     a list property: fedcl's items are the reference items less A, B, ...
    swaps:A,B/C,D     a list property: the reference items less A, B, then C, D (by name: fedcl's own
                      versions of extensions it implements itself)
                      (items are words, or NAME:VERSION pairs matched by NAME)

With clinfo's default output as well (REFERENCE.txt, FEDCL.txt), its "NULL platform behavior"
section must match too, names aside: what the loader does with a NULL platform when the platform is
alone (clGetDeviceIDs, clCreateContext, clCreateContextFromType of every device type).

Exits 1 on a difference no rule allows, and lists rules that matched no difference (stale)."""
import re
import sys

LINE = re.compile(r"^\[([^/\]]+)/([^\]]+)\]\s+(\S+)\s*(.*)$")


def parse_raw(path):
    """{(section, device, PROPERTY): value} of the lines that belong to a device or the loader."""
    properties = {}
    with open(path, encoding="utf-8", errors="replace") as raw:
        for line in raw:
            match = LINE.match(line.rstrip("\n"))
            if not match:
                continue  # the platform section and blank lines
            tag, device, key, value = match.groups()
            section = "loader" if tag == "OCLICD" else "device"
            if section == "device" and device == "*":
                continue  # the platform's name and device count
            properties[(section, device, key)] = value.strip()
    return properties


def list_items(value):
    """The items of a list value: extension names, NAME:VERSION pairs, or OR-ed flags."""
    return [item for item in re.split(r"[\s|]+", value) if item]


def item_name(item):
    return item.split(":", 1)[0]


def parse_rules(path):
    rules = {}
    with open(path, encoding="utf-8") as text:
        for number, line in enumerate(text, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split(None, 2)
            if len(fields) < 3:
                sys.exit(f"{path}:{number}: want PROPERTY RULE REASON")
            rules[fields[0]] = (fields[1], fields[2])
    return rules


def allowed(rule, reference, actual):
    """Whether rule admits the value actual (None: absent) where the reference has reference."""
    kind, _, argument = rule.partition(":")
    if kind == "differs":
        return True
    if kind == "absent":
        return actual is None
    if actual is None:
        return False
    if kind == "equals":
        return list_items(actual) == list_items(argument)
    if kind == "extends":
        return actual.startswith(reference)
    if kind == "drops":
        dropped = set(argument.split(","))
        expected = [item for item in list_items(reference) if item_name(item) not in dropped]
        return list_items(actual) == expected
    if kind == "swaps":
        dropped, _, added = argument.partition("/")
        expected = [item_name(item) for item in list_items(reference) if item_name(item) not in dropped.split(",")]
        return [item_name(item) for item in list_items(actual)] == expected + added.split(",")
    sys.exit(f"unknown rule {rule}")


def null_platform_section(path):
    """The NULL platform section of clinfo's default output, with platform and device names cut."""
    with open(path, encoding="utf-8", errors="replace") as text:
        lines = text.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("NULL platform behavior")), None)
    if start is None:
        return None
    section = []
    for line in lines[start + 1:]:
        if line and not line.startswith(" "):
            break  # the next section
        line = re.sub(r"\[[^\]]+\]$", "[SUFFIX]", line.rstrip())
        line = re.sub(r"^(\s*(?:Platform Name|Device Name|clGetPlatformInfo\(NULL, CL_PLATFORM_NAME, \.\.\.\))).*",
                      r"\1 NAME", line)
        section.append(line)
    return section


def compare_null_platform(reference_path, fedcl_path):
    reference, fedcl = null_platform_section(reference_path), null_platform_section(fedcl_path)
    if reference is None or fedcl is None:
        return [f"no NULL platform section in {reference_path if reference is None else fedcl_path}"]
    failures = [f"NULL platform: PoCL {a.strip()!r}, fedcl {b.strip()!r}"
                for a, b in zip(reference, fedcl) if a != b]
    if len(reference) != len(fedcl):
        failures.append(f"NULL platform: PoCL has {len(reference)} lines, fedcl {len(fedcl)}")
    print(f"{len(reference)} NULL platform lines compared")
    return failures


def main(reference_path, fedcl_path, rules_path, reference_text=None, fedcl_text=None):
    reference, fedcl, rules = parse_raw(reference_path), parse_raw(fedcl_path), parse_rules(rules_path)
    if not any(key[0] == "device" for key in fedcl):
        sys.exit("the fedcl run shows no device: is fedcld reachable?")
    used, failures, compared = set(), [], 0
    for key in sorted(set(reference) | set(fedcl)):
        compared += 1
        expected, actual = reference.get(key), fedcl.get(key)
        if expected == actual:
            continue
        prop = key[2]
        where = f"{key[0]} {key[1]} {prop}"
        if expected is None:
            failures.append(f"{where}: only fedcl reports it: {actual!r}")
            continue
        if prop in rules and allowed(rules[prop][0], expected, actual):
            used.add(prop)
            print(f"allowed  {where} ({rules[prop][0]}): {rules[prop][1]}")
            continue
        failures.append(f"{where}: PoCL {expected!r}, fedcl {actual!r}")
    if reference_text:
        failures += compare_null_platform(reference_text, fedcl_text)
    for prop in sorted(set(rules) - used):
        print(f"stale    {prop}: no difference seen, the rule may go")
    for failure in failures:
        print(f"DIFFERS  {failure}")
    print(f"{compared} properties compared, {len(used)} allowed differences, {len(failures)} unexplained")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) not in (4, 6):
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
