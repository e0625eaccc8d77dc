"""Reader for the PlanetLab / CoMon VM CPU traces shipped with CloudSim (one file per VM).

Layout (CloudSim's ``workload/planetlab/<yyyymmdd>/``): one folder per day, holding one file per
VM. The file name is the VM's name (the PlanetLab host with ``.`` -> ``_``, then the slice; 55
names of a real day contain a space, e.g. ``metis_mcs_suffolk_edu_ yale_p4p``). Each file holds
one whole CPU percent (0..100) per line, 288 lines = 24 h at an implicit 300 s step, with no
header and no timestamp; the day's wall-clock start is not recorded.

:func:`read_planetlab` returns one :class:`~digital_twin.traces.TraceSeries` column per VM, named
by its file name (spaces kept), line ``k`` of every file being tick ``k``. Nodes pick VMs through
the scenario mapping (``per-machine`` by name list, ``sample`` of N seeded, or ``group-mean``:
see :mod:`digital_twin.traces.mapping`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import numpy as np

from digital_twin._files import not_a_file_reason
from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.tick_grid import check_tick_s
from digital_twin.traces._io import check_file
from digital_twin.traces.series import MAX_GRID_CELLS, TraceSeries

DEFAULT_TICK_S = 300.0
"""Seconds per line of a PlanetLab file (the CoMon sampling step; the files do not record it)."""
_WHOLE_PERCENT = re.compile(r"\s*[0-9]+\s*")


def read_planetlab(
    path: str | Path,
    *,
    vms: Sequence[str] | None = None,
    start_hour: float = 0.0,
    tick_s: float = DEFAULT_TICK_S,
    mem_pct: float = 0.0,
) -> TraceSeries:
    """Read a folder of PlanetLab VM files into a series with one machine per VM.

    Every regular file of the folder whose name does not start with ``.`` is one VM (hidden
    files such as ``.DS_Store`` are skipped; anything else, a ``README`` included, must be a VM
    file). VMs are ordered by file name (code-point order, which is CloudSim's and git's byte
    order), so a seeded ``sample`` mapping picks the same VMs from the same folder.

    Values: line ``k`` (1-based) of a file is the VM's cpu % at tick ``k - 1`` of the day; it must
    be a whole number in [0, 100] (CloudSim parses each line with ``Integer.valueOf`` and divides
    by 100). The trace has no memory, so every VM's mem % is the constant ``mem_pct``. Line
    endings may be LF or CRLF; blank lines after the last value are ignored, a blank line before
    it is an error (it would shift every later tick).

    Args:
        path: The day's folder (e.g. ``.../planetlab/20110306``).
        vms: File names to read, in output order (names with spaces as they are); ``None`` = every
            VM file of the folder.
        start_hour: Hour of the trace day that becomes tick 0, in [0, 24): the first
            ``start_hour x 3600 / tick_s`` lines of every file are skipped (that count must be a
            whole number). ``series.start_s`` is ``start_hour x 3600``.
        tick_s: Seconds per line (> 0); 300 s in every published PlanetLab day.
        mem_pct: Memory background in percent for every VM and tick, in [0, 100].

    Returns:
        A :class:`TraceSeries` of shape ``(n_lines - skipped, n_vms, 2)``, machine ids = the file
        names, ``filled`` = ``None`` (every value is observed).

    Raises:
        TraceError: The folder is missing or holds no VM file; a VM file is empty, not UTF-8,
            has a blank line inside, a value that is not a whole number in [0, 100] (the message
            names the file and the line), or another line count than the first file; a name of
            ``vms`` is not a file of the folder.
        SpecError: An invalid ``vms``, ``start_hour``, ``tick_s`` or ``mem_pct``.

    Example:
        >>> series = read_planetlab("planetlab/20110306", start_hour=8)  # doctest: +SKIP
        >>> series.values_pct.shape  # doctest: +SKIP
        (192, 898, 2)
    """
    tick_s = check_tick_s(tick_s)
    skip = _skipped_lines(start_hour, tick_s)
    if isinstance(mem_pct, bool) or not isinstance(mem_pct, int | float) or not 0.0 <= mem_pct <= 100.0:
        raise SpecError(f"mem_pct must be a number in [0, 100], got {short_repr(mem_pct)}")
    folder = _check_folder(Path(path))
    files = _vm_files(folder, vms)
    try:
        first = _read_vm(files[0])
    except TraceError as exc:
        folders = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not folders:
            raise
        raise TraceError(
            f"{exc}; the folder also holds the folder(s) {short_repr(folders)}: give the folder of one day's VM files"
        ) from None
    if first.size * len(files) > MAX_GRID_CELLS:
        raise TraceError(
            f"{folder}: {len(files):,} VM files x {first.size:,} lines is above {MAX_GRID_CELLS:,} values; "
            "pass vms= to read fewer"
        )
    cpu = np.empty((first.size, len(files)))
    cpu[:, 0] = first
    for column, file in enumerate(files[1:], start=1):
        values = _read_vm(file)
        if values.size != first.size:
            raise TraceError(
                f"{file}: {values.size} lines, but {files[0].name!r} has {first.size}: every VM file of a "
                "day has one line per tick"
            )
        cpu[:, column] = values
    if skip >= first.size:
        raise TraceError(
            f"{folder}: start_hour={start_hour:g} skips {skip} lines of {tick_s:g} s, but the files have only "
            f"{first.size} lines"
        )
    values = np.stack([cpu[skip:], np.full_like(cpu[skip:], float(mem_pct))], axis=-1)
    return TraceSeries(
        values,
        tick_s,
        tuple(f.name for f in files),
        f"{folder} (planetlab, {len(files)} VM(s), {first.size} lines of {tick_s:g} s from hour {start_hour:g}, "
        f"mem {mem_pct:g} %)",
        start_s=start_hour * 3600.0,
    )


def _skipped_lines(start_hour: float, tick_s: float) -> int:
    """Lines before ``start_hour``: a whole number of ticks, or a :class:`SpecError`."""
    if isinstance(start_hour, bool) or not isinstance(start_hour, int | float) or not 0.0 <= start_hour < 24.0:
        raise SpecError(f"start_hour must be a number in [0, 24), got {short_repr(start_hour)}")
    lines = start_hour * 3600.0 / tick_s
    if abs(lines - round(lines)) > 1e-9:
        raise SpecError(
            f"start_hour={start_hour:g} is {lines:g} lines of {tick_s:g} s, not a whole number: pick an hour on "
            "the tick grid"
        )
    return round(lines)


def _check_folder(folder: Path) -> Path:
    if not folder.exists():
        raise TraceError(f"{folder}: folder not found")
    if not folder.is_dir():
        raise TraceError(
            f"{folder}: not a folder; a PlanetLab day is a folder with one file per VM: give the folder's path"
        )
    return folder


def _vm_files(folder: Path, vms: Sequence[str] | None) -> list[Path]:
    """The VM files to read, in output order."""
    try:
        entries = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        raise TraceError(f"{folder}: cannot list the folder ({exc.strerror or exc})") from None
    files = [p for p in entries if not_a_file_reason(p) is None]
    if not files:
        folders = [p.name for p in entries if p.is_dir()]
        hint = ""
        if folders:
            hint = f"; it holds the folder(s) {short_repr(folders)}: give the folder of one day's VM files"
        raise TraceError(f"{folder}: no VM files (a PlanetLab day has one file per VM){hint}")
    if vms is None:
        return files
    if isinstance(vms, str) or not vms or not all(isinstance(v, str) for v in vms):
        raise SpecError(f"vms must be a non-empty list of VM (file) names, got {short_repr(vms)}")
    if len(set(vms)) != len(vms):
        raise SpecError(f"vms names a VM twice: {short_repr(list(vms))}")
    by_name = {p.name: p for p in files}
    missing = [v for v in vms if v not in by_name]
    if missing:
        raise TraceError(f"{folder}: no VM file named {short_repr(missing[0])}{_near_miss(missing[0], list(by_name))}")
    return [by_name[v] for v in vms]


def _near_miss(name: str, names: Sequence[str]) -> str:
    """A hint naming the file that differs from ``name`` only in spaces or case, if there is one."""
    squashed = name.replace(" ", "").lower()
    close = [n for n in names if n.replace(" ", "").lower() == squashed]
    if close:
        return f" (did you mean {close[0]!r}? names may contain spaces: quote the name whole)"
    return f" ({len(names)} VM files, e.g. {short_repr(sorted(names)[:3])})"


def _read_vm(file: Path) -> np.ndarray:
    """``(n_lines,)`` float64 cpu % of one VM file, every line checked."""
    check_file(file)
    try:
        text = file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceError(f"{file}: cannot read as UTF-8 text ({exc})") from None
    except OSError as exc:
        raise TraceError(f"{file}: cannot read ({exc.strerror or exc})") from None
    lines = text.split("\n")
    while lines and not lines[-1].strip():  # a final newline (or trailing blank lines) ends the data
        lines.pop()
    if not lines:
        raise TraceError(f"{file}: no values (only blank lines)")
    try:
        numbers = [int(line) for line in lines]
    except ValueError:  # text, or more digits than Python reads as an int
        numbers = []
    if len(numbers) != len(lines) or "_" in text:  # int() also reads "1_0": the strict check finds either
        _raise_first_bad_line(file, lines)
    try:
        values = np.array(numbers, dtype=np.float64)
    except OverflowError:  # an integer beyond float64, far outside [0, 100]
        line = next(i for i, n in enumerate(numbers) if not 0 <= n <= 100) + 1
        raise TraceError(f"{file}: line {line}: value {short_repr(numbers[line - 1])} is outside [0, 100] %") from None
    bad = np.flatnonzero((values < 0) | (values > 100))
    if bad.size:
        line = int(bad[0]) + 1
        more = f" ({bad.size} such lines)" if bad.size > 1 else ""
        raise TraceError(f"{file}: line {line}: value {values[bad[0]]:g} is outside [0, 100] %{more}")
    return values


def _raise_first_bad_line(file: Path, lines: list[str]) -> NoReturn:
    for number, line in enumerate(lines, start=1):
        if _WHOLE_PERCENT.fullmatch(line) and not _reads_as_int(line):
            digits = len(line.strip())
            raise TraceError(f"{file}: line {number}: a number of {digits:,} digits is not a whole percent in [0, 100]")
        if not _WHOLE_PERCENT.fullmatch(line):
            if not line.strip():
                problem = "blank line before the last value (a missing sample would shift every later tick)"
            else:
                problem = f"{short_repr(line.strip())} is not a whole percent (PlanetLab files hold integers 0..100"
                problem += "; 0.35 would be a fraction: multiply by 100)" if _is_fraction(line) else ")"
            raise TraceError(f"{file}: line {number}: {problem}")
    # Unreachable: a line that int() refuses, or one holding "_", fails one of the checks above.
    raise TraceError(f"{file}: a line is not a whole percent")


def _reads_as_int(line: str) -> bool:
    """Whether ``int`` reads the line (it refuses more digits than ``sys.get_int_max_str_digits()``)."""
    try:
        int(line)
    except ValueError:
        return False
    return True


def _is_fraction(line: str) -> bool:
    try:
        return 0.0 < float(line) < 1.0
    except ValueError:
        return False
