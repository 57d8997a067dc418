"""Align two sequences of record keys in near-linear time, for rig diff.

difflib.SequenceMatcher on whole logs, and a similarity search over every
old x new pair of a replaced block, grew with the square of what changed:
two different 500 KB boots took minutes. Here the logs are cut at anchors
first: keys that occur as often in one range as in the other, paired in
order (a key unique on both sides is the usual case, as in patience diff),
of which the longest chain that keeps both orders is kept. Between two
anchors the same is done again; only a stretch with no anchor left goes to
SequenceMatcher, and only when it is small.

The result has SequenceMatcher's opcode form, so the comparison and the
unified diff read it the same way.
"""
import bisect
import difflib
from collections import Counter, defaultdict
from typing import Hashable, List, Sequence, Tuple

Opcode = Tuple[str, int, int, int, int]

# A stretch without anchors goes to SequenceMatcher only below this many
# old x new pairs; a larger one is one replaced block.
SMALL_PRODUCT = 250_000


def align(a: Sequence[Hashable], b: Sequence[Hashable]) -> List[Opcode]:
    """Opcodes ('equal', 'replace', 'delete', 'insert') turning a into b."""
    ops: List[Opcode] = []
    # Work items, last first: a range still to align, or opcodes ready to go
    # out. A range's parts are pushed in reverse so they come out in order.
    work: list = [("range", 0, len(a), 0, len(b))]
    while work:
        item = work.pop()
        if item[0] == "ops":
            ops += item[1]
            continue
        _, alo, ahi, blo, bhi = item
        head = 0
        while alo + head < ahi and blo + head < bhi and a[alo + head] == b[blo + head]:
            head += 1
        tail = 0
        while (ahi - tail > alo + head and bhi - tail > blo + head
               and a[ahi - tail - 1] == b[bhi - tail - 1]):
            tail += 1
        ilo, ihi, jlo, jhi = alo + head, ahi - tail, blo + head, bhi - tail
        ops.append(("equal", alo, ilo, blo, jlo))
        work.append(("ops", [("equal", ihi, ahi, jhi, bhi)]))
        anchors = chain(a, ilo, ihi, b, jlo, jhi)
        if not anchors:
            work.append(("ops", unanchored(a, ilo, ihi, b, jlo, jhi)))
            continue
        parts, pi, pj = [], ilo, jlo
        for i, j in anchors:
            parts += [("range", pi, i, pj, j), ("ops", [("equal", i, i + 1, j, j + 1)])]
            pi, pj = i + 1, j + 1
        parts.append(("range", pi, ihi, pj, jhi))
        work += reversed(parts)
    return merge(ops)


def chain(a, ilo, ihi, b, jlo, jhi) -> List[Tuple[int, int]]:
    """The anchors of a range: keys as frequent in a[ilo:ihi] as in b[jlo:jhi],
    their occurrences paired in order, then the longest chain of pairs that
    increases on both sides (patience sorting)."""
    ca = Counter(a[ilo:ihi])
    cb = Counter(b[jlo:jhi])
    same = {k for k, n in ca.items() if cb.get(k) == n}
    if not same:
        return []
    where_b = defaultdict(list)
    for j in range(jlo, jhi):
        if b[j] in same:
            where_b[b[j]].append(j)
    taken = Counter()
    pairs = []
    for i in range(ilo, ihi):
        k = a[i]
        if k in same:
            pairs.append((i, where_b[k][taken[k]]))
            taken[k] += 1
    return longest_increasing(pairs)


def longest_increasing(pairs: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The longest subsequence of pairs (in i order) whose j increases."""
    tails: List[int] = []          # smallest j ending a chain of each length
    tail_at: List[int] = []        # index into pairs of that end
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k] = j
            tail_at[k] = n
        back[n] = tail_at[k - 1] if k else -1
    out, n = [], tail_at[-1] if tail_at else -1
    while n >= 0:
        out.append(pairs[n])
        n = back[n]
    return out[::-1]


def unanchored(a, ilo, ihi, b, jlo, jhi) -> List[Opcode]:
    """A stretch with no anchor: SequenceMatcher if small, else one block."""
    if ilo == ihi and jlo == jhi:
        return []
    if ilo == ihi:
        return [("insert", ilo, ihi, jlo, jhi)]
    if jlo == jhi:
        return [("delete", ilo, ihi, jlo, jhi)]
    if (ihi - ilo) * (jhi - jlo) > SMALL_PRODUCT:
        return [("replace", ilo, ihi, jlo, jhi)]
    sm = difflib.SequenceMatcher(None, a[ilo:ihi], b[jlo:jhi], autojunk=False)
    return [(t, i1 + ilo, i2 + ilo, j1 + jlo, j2 + jlo) for t, i1, i2, j1, j2 in sm.get_opcodes()]


def merge(ops: List[Opcode]) -> List[Opcode]:
    """Adjacent opcodes of one kind as one, empty ones dropped; neighbouring
    deletes and inserts become a replace, as SequenceMatcher reports them."""
    out: List[Opcode] = []
    for tag, i1, i2, j1, j2 in ops:
        if i1 == i2 and j1 == j2:
            continue
        if out:
            pt, pi1, pi2, pj1, pj2 = out[-1]
            if pt == tag or (pt != "equal" and tag != "equal"):
                kind = tag if pt == tag else "replace"
                out[-1] = (kind, pi1, i2, pj1, j2)
                continue
        out.append((tag, i1, i2, j1, j2))
    return [(("insert" if i1 == i2 else "delete" if j1 == j2 else t), i1, i2, j1, j2)
            if t != "equal" else (t, i1, i2, j1, j2) for t, i1, i2, j1, j2 in out]


def grouped(ops: List[Opcode], n: int = 3) -> List[List[Opcode]]:
    """Hunks of changes with n equal records of context, as difflib groups them."""
    if not ops:
        return []
    ops = list(ops)
    if ops[0][0] == "equal":
        t, i1, i2, j1, j2 = ops[0]
        ops[0] = t, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if ops[-1][0] == "equal":
        t, i1, i2, j1, j2 = ops[-1]
        ops[-1] = t, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    groups, group = [], []
    for t, i1, i2, j1, j2 in ops:
        if t == "equal" and i2 - i1 > 2 * n:
            group.append((t, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((t, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def unified(a: List[str], b: List[str], ops: List[Opcode], name_a: str, name_b: str,
            n: int = 3, offsets: Tuple[int, int] = (0, 0), headers: bool = True) -> List[str]:
    """A unified diff of the lines a and b from their opcodes; offsets: where
    a and b begin in the whole logs (a window of them, rig.evidence.diffstream),
    headers: whether the --- and +++ lines come first."""
    out: List[str] = []
    oa, ob = offsets
    for group in grouped(ops, n):
        if not out and headers:
            out += [f"--- {name_a}", f"+++ {name_b}"]
        first, last = group[0], group[-1]
        out.append(f"@@ -{span(first[1] + oa, last[2] + oa)} "
                   f"+{span(first[3] + ob, last[4] + ob)} @@")
        for t, i1, i2, j1, j2 in group:
            if t == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            out += ["-" + line for line in a[i1:i2]]
            out += ["+" + line for line in b[j1:j2]]
    return out


def span(start: int, stop: int) -> str:
    """A hunk range as unified diffs write it (1-based; an empty one names the line before)."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"
