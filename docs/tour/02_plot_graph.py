"""Tour step 2: the graph as a picture, and as a layer table.

    python docs/tour/02_plot_graph.py [output-folder]

Prints print_summary's table and the graphviz source of plot_network; renders the drawing to
`lenet.png` in the output folder (default: a temporary folder) when Graphviz's `dot` program
is installed, and writes the source `lenet.gv` there either way (say which on stderr). Needs
the graphviz Python package (`pip install 'minimod[viz]'`).
"""
import os
import shutil
import sys
import tempfile

import minimod as mx

data = mx.sym.Variable("data")
net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
net = mx.sym.Flatten(net, name="flatten")
net = mx.sym.FullyConnected(net, num_hidden=10, name="fc1")
net = mx.sym.SoftmaxOutput(net, name="softmax")
shape = {"data": (64, 1, 28, 28)}

mx.viz.print_summary(net, shape=shape, line_length=80)

dot = mx.viz.plot_network(net, shape=shape, save_format="png", title="lenet")
print(dot.source, end="")

out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="minimod-tour-")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "lenet.gv"), "w") as f:
    f.write(dot.source)
if shutil.which("dot"):
    path = dot.render(filename="lenet", directory=out, cleanup=True)
    print("rendered %s" % path, file=sys.stderr)
else:
    print("Graphviz 'dot' not found: wrote only %s" % os.path.join(out, "lenet.gv"),
          file=sys.stderr)
