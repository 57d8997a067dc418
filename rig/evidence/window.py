"""Judging a long sequence a block at a time, with the look-ahead a judgement
needs: how the log readers (fragments of cut lines, crash titles) keep to
the memory of a block whatever the log's length."""
from typing import Callable, Iterable, Iterator, List, Sequence, Tuple, TypeVar

T = TypeVar("T")
U = TypeVar("U")


def windowed(items: Iterable[T], judge: Callable[[Sequence[T]], U], size: int, ahead: int
             ) -> Iterator[Tuple[List[T], U, int]]:
    """Blocks of up to size items, each with the ahead items that follow it:
    (window, judge(window), n) where the first n items of window are the
    block. A judgement of an item that looks at most ahead items further
    is the same in the window as in the whole sequence."""
    window: List[T] = []
    it = iter(items)
    done = False
    while not done or window:
        while len(window) < size + ahead and not done:
            try:
                window.append(next(it))
            except StopIteration:
                done = True
        n = min(size, len(window)) if not done else len(window)
        if not window:
            return
        yield window, judge(window), n
        window = window[n:]
