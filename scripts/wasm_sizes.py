#!/usr/bin/env python3
"""Where a wasm module's bytes are: section sizes, and code bytes per crate and per
module path from the module's `name` section. rustc writes one; trunk's wasm-opt -Oz
drops it, so for figures near the shipped module run the same steps keeping names:

    wasm-bindgen --target web --out-dir /tmp/wb \
        $CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-release/app.wasm
    wasm-opt -Oz -g --enable-bulk-memory --enable-nontrapping-float-to-int \
        --enable-sign-ext --enable-mutable-globals --enable-reference-types \
        --enable-multivalue /tmp/wb/app_bg.wasm -o /tmp/wb/named.wasm
    python3 scripts/wasm_sizes.py /tmp/wb/named.wasm [--depth N] [--top K] [--under PATH]

Function names are demangled roughly (legacy `_ZN…E` and v0 names are cut to their
path); generic instances are grouped under the path that defines them. The grouping is
by the path's first N segments (default 2: crate::module)."""

import re
import sys
from collections import Counter


def leb(data, pos):
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return result, pos


def sections(data):
    if data[:4] != b"\0asm":
        raise SystemExit("not a wasm module")
    pos = 8
    while pos < len(data):
        sid = data[pos]
        size, body = leb(data, pos + 1)
        yield sid, data[body : body + size]
        pos = body + size


def name_of(sid, body):
    if sid != 0:
        return ["custom", "type", "import", "function", "table", "memory", "global",
                "export", "start", "element", "code", "data", "datacount"][sid]
    n, p = leb(body, 0)
    return "custom:" + body[p : p + n].decode("utf-8", "replace")


def imported_functions(body):
    count, p = leb(body, 0)
    funcs = 0
    for _ in range(count):
        for _ in range(2):
            n, p = leb(body, p)
            p += n
        kind = body[p]
        p += 1
        if kind == 0:
            _, p = leb(body, p)
            funcs += 1
        elif kind == 1:
            p += 1
            flags, p = leb(body, p)
            _, p = leb(body, p)
            if flags & 1:
                _, p = leb(body, p)
        elif kind == 2:
            flags, p = leb(body, p)
            _, p = leb(body, p)
            if flags & 1:
                _, p = leb(body, p)
        elif kind == 3:
            p += 2
        elif kind == 4:
            p += 1
            _, p = leb(body, p)
    return funcs


def code_sizes(body):
    count, p = leb(body, 0)
    sizes = []
    for _ in range(count):
        size, q = leb(body, p)
        sizes.append(size + (q - p))
        p = q + size
    return sizes


def function_names(body):
    names = {}
    n, p = leb(body, 0)
    p += n
    while p < len(body):
        kind = body[p]
        size, q = leb(body, p + 1)
        if kind == 1:
            count, r = leb(body, q)
            for _ in range(count):
                idx, r = leb(body, r)
                ln, r = leb(body, r)
                names[idx] = body[r : r + ln].decode("utf-8", "replace")
                r += ln
        p = q + size
    return names


LEGACY = re.compile(r"^_ZN(.*)E$")


def demangle_path(name):
    m = LEGACY.match(name)
    if m:
        rest, parts, i = m.group(1), [], 0
        while i < len(rest) and rest[i].isdigit():
            j = i
            while rest[j].isdigit():
                j += 1
            n = int(rest[i:j])
            parts.append(rest[j : j + n])
            i = j + n
        parts = [x for x in parts if not re.fullmatch(r"h[0-9a-f]{16}", x)]
        text = "::".join(parts).replace("$LT$", "<").replace("$GT$", ">")
        text = text.replace("$u20$", " ").replace("$C$", ",").replace("..", "::")
        # `<T as Trait>::f`: credit the type's path, or the trait's when the type is a
        # generic parameter or a primitive.
        text = text.lstrip("_<")
        if " as " in text:
            ty, trait = text.split(" as ", 1)
            ty = ty.lstrip("&*$RF$ ")
            text = trait if "::" not in ty else ty
        return text.lstrip("&*$RF$ ")
    if name.startswith("_R"):
        idents = re.findall(r"(?:\d+)_?([A-Za-z_][A-Za-z0-9_]*)", name[2:])
        return "::".join(i for i in idents[:4] if len(i) > 1) or name
    return name


def main():
    args = sys.argv[1:]
    if not args:
        raise SystemExit(__doc__)
    depth = 2
    top = 40
    under = None
    if "--under" in args:
        under = args[args.index("--under") + 1]
    if "--depth" in args:
        depth = int(args[args.index("--depth") + 1])
    if "--top" in args:
        top = int(args[args.index("--top") + 1])
    data = open(args[0], "rb").read()
    print(f"{args[0]}: {len(data)} bytes")
    imported = 0
    sizes = []
    names = {}
    for sid, body in sections(data):
        label = name_of(sid, body)
        print(f"  section {label:<24} {len(body):>9}")
        if sid == 2:
            imported = imported_functions(body)
        elif sid == 10:
            sizes = code_sizes(body)
        elif label == "custom:name":
            names = function_names(body)
    if not names:
        print("no name section: read the module rustc wrote, before wasm-opt")
        return
    groups = Counter()
    for i, size in enumerate(sizes):
        path = demangle_path(names.get(imported + i, "?"))
        segs = [s for s in path.split("::") if s]
        if under and not "::".join(segs).startswith(under):
            continue
        groups["::".join(segs[:depth]) or "?"] += size
    total = sum(groups.values())
    scope = f", under {under}" if under else ""
    print(f"code bytes by path (first {depth} segments{scope}), of {total}:")
    for path, size in groups.most_common(top):
        print(f"  {size:>9} {100 * size / total:5.1f}%  {path}")


if __name__ == "__main__":
    main()
