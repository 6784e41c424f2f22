"""The main example job (`python -m minimod.examples.train_digits`), 3 epochs instead of 12."""
import os

from minimod.examples import train_digits


def test_train_digits_learns(tmp_path, capsys):
    prefix = str(tmp_path / "digits")
    accuracy = train_digits.main(["--epochs", "3", "--prefix", prefix])
    assert accuracy > 0.8
    assert os.path.exists("%s-symbol.json" % prefix)
    assert os.path.exists("%s-0003.params" % prefix)
    assert "test accuracy" in capsys.readouterr().out
