"""mx.log.get_logger: MXNet's line format (as MXNet 1.9.1 printed it: colour, level letter,
date and time, pid, file:function:line), configured once per name, plain lines in a file."""
import io
import logging
import os
import re

import pytest

import minimod as mx


def test_stderr_lines_read_as_mxnets():
    logger = mx.log.get_logger("minimod_test_log_a", level=logging.DEBUG)
    buf = io.StringIO()
    logger.handlers[0].stream = buf
    logger.debug("d")
    logger.info("i %d", 3)
    logger.warning("w")
    lines = buf.getvalue().splitlines()
    pattern = (r"\x1b\[%sm%s\d{4} \d\d:\d\d:\d\d %d test_log\.py:"
               r"test_stderr_lines_read_as_mxnets:\d+\]\x1b\[0m %s")
    for line, (colour, letter, text) in zip(lines, [("34", "D", "d"), ("32", "I", "i 3"),
                                                    ("31", "W", "w")]):
        assert re.fullmatch(pattern % (colour, letter, os.getpid(), text), line), line


def test_configured_once_per_name(tmp_path):
    first = mx.log.get_logger("minimod_test_log_b", level=logging.DEBUG)
    again = mx.log.get_logger("minimod_test_log_b", level=logging.ERROR)
    assert again is first and len(first.handlers) == 1 and first.level == logging.DEBUG
    path = tmp_path / "run.log"
    to_file = mx.log.get_logger("minimod_test_log_c", filename=str(path), level=logging.INFO)
    to_file.info("plain %s", "text")
    to_file.handlers[0].flush()
    assert path.read_text() == "plain text\n"
    with pytest.warns(DeprecationWarning, match="use get_logger|Use get_logger"):
        assert mx.log.getLogger("minimod_test_log_b") is first
