"""A built step's manifest as an artifact: located in the cache (its files
checked, rig.artifacts.cache), or built on request, or refused with the
make target that builds it."""
from pathlib import Path

from rig.artifacts.cache import CacheEntryError, lock_of, locked
from rig.artifacts.runner import BuildError


class Artifact(dict):
    """A manifest plus helpers to turn its relative outputs into paths."""

    def path(self, name: str) -> Path:
        return Path(self["dir"]) / self["outputs"][name]


def locate(step, build_fn, build: bool, force: bool, what: str, make_target: str) -> Artifact:
    if build or force:
        return Artifact(build_fn(force=force))
    if not step.is_built():
        raise BuildError(f"{what} is not built for the current inputs (expected in "
                         f"{step.dir}): run `make {make_target}`")
    with locked(lock_of(step.dir)):
        try:
            m = step.manifest()
        except CacheEntryError as e:
            gone = ("The entry is removed" if step.remove() else
                    f"The entry could not be removed (remove {step.dir})")
            raise CacheEntryError(f"{e}. {gone}; build {what} again with "
                                  f"`make {make_target}`") from None
    m["dir"] = str(step.dir)
    return Artifact(m)
