"""Write ONNX models exported by PyTorch, with PyTorch's own outputs, for the import tests
(run with a venv holding torch, onnx and onnxscript, from this folder):

    /path/to/torch-venv/bin/python gen_torch_models.py

Each model is exported twice where PyTorch can: by its TorchScript exporter at opset 13
(`torch_NAME_ts.onnx`) and by its torch.export-based exporter (`torch_NAME_dynamo.onnx`,
opset 18). torch_golden.npz holds each model's input (NAME:x) and output (NAME:y).
"""
import numpy as np
import torch
import torch.nn as nn


class Cnn(nn.Module):
    """Strided convolution, BatchNorm, a grouped residual block, max pooling, global average
    pooling, a linear layer and softmax."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1, groups=2), nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, 2, padding=1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        z = self.pool(torch.relu(self.b2(self.c2(y)) + y))
        z = nn.functional.adaptive_avg_pool2d(z, 1).flatten(1)
        return torch.softmax(self.fc(z), dim=1)


class LstmLm(nn.Module):
    """Embedding, a two-layer LSTM over (T, N), a decoder over every step."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.lstm = nn.LSTM(8, 12, num_layers=2)
        self.dec = nn.Linear(12, 20)

    def forward(self, x):
        out, _ = self.lstm(self.embed(x))
        return self.dec(out)


class BiGru(nn.Module):
    """A bidirectional GRU, its last step through a linear layer."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 7, bidirectional=True)
        self.fc = nn.Linear(14, 3)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.fc(out[-1])


class Mixer(nn.Module):
    """LayerNorm, GELU, a transpose and a mean over tokens: a transformer block's pieces."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.up, self.down = nn.Linear(16, 32), nn.Linear(32, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        y = x + self.down(nn.functional.gelu(self.up(self.norm(x))))
        return self.head(y.transpose(1, 2).mean(dim=2))


MODELS = {
    "cnn": (Cnn, lambda: torch.randn(2, 3, 16, 16)),
    "lstm_lm": (LstmLm, lambda: torch.randint(0, 20, (6, 3))),
    "bigru": (BiGru, lambda: torch.randn(5, 2, 6)),
    "mixer": (Mixer, lambda: torch.randn(2, 7, 16)),
}


def main():
    golden = {}
    for k, (name, (cls, make_input)) in enumerate(sorted(MODELS.items())):
        torch.manual_seed(10 + k)
        net = cls().eval()
        for module in net.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 1.5)
        x = make_input()
        with torch.no_grad():
            golden[name + ":y"] = net(x).numpy()
        golden[name + ":x"] = x.numpy()
        torch.onnx.export(net, (x,), "torch_%s_ts.onnx" % name, dynamo=False,
                          input_names=["x"], output_names=["y"], opset_version=13)
        try:
            torch.onnx.export(net, (x,), "torch_%s_dynamo.onnx" % name, dynamo=True,
                              input_names=["x"], output_names=["y"], external_data=False)
        except Exception as err:  # noqa: BLE001 - recorded: that exporter cannot do this one
            print("%s: the torch.export-based exporter failed: %s" % (name, err))
    np.savez_compressed("torch_golden.npz", **golden)


if __name__ == "__main__":
    main()
