"""The run's SB3 logger: TensorBoard events and ``progress.csv`` in ``RUN/tb_1/``.

A resumed run logs into the same folder: TensorBoard reads the new events file beside the old
ones as one curve (the resumed steps start after the saved ones), and ``progress.csv`` is
continued rather than truncated (SB3's CSV writer would start it afresh).
"""

from __future__ import annotations

from pathlib import Path

from stable_baselines3.common.logger import CSVOutputFormat, Logger, TensorBoardOutputFormat, configure

PROGRESS_CSV = "progress.csv"


def open_run_logger(folder: Path, continued: bool = False) -> Logger:
    """A logger writing TensorBoard events and ``progress.csv`` into ``folder``.

    Args:
        folder: ``RUN/tb_1``.
        continued: Append to the folder's existing ``progress.csv`` (a resumed run).
    """
    if not continued:
        return configure(str(folder), ["tensorboard", "csv"])
    folder.mkdir(parents=True, exist_ok=True)
    return Logger(str(folder), [TensorBoardOutputFormat(str(folder)), ContinuedCSVOutputFormat(folder / PROGRESS_CSV)])


class ContinuedCSVOutputFormat(CSVOutputFormat):
    """SB3's CSV writer, keeping the rows (and columns) already in the file.

    New columns are added as SB3 adds them: every earlier row gets an empty cell.
    """

    def __init__(self, filename: Path) -> None:
        previous = filename.read_text(encoding="utf-8") if filename.is_file() else ""
        super().__init__(str(filename))  # opens the file "w+": write the previous rows back
        lines = previous.splitlines()
        if lines:
            self.keys = lines[0].split(self.separator)
            self.file.write(previous if previous.endswith("\n") else previous + "\n")
            self.file.flush()
