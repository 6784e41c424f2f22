"""Write nn_golden.npz: outputs and input gradients of MXNet 1.9.1's nn operators.

Run with an MXNet 1.9.1 environment (not needed by the tests):
    OMP_NUM_THREADS=1 python tests/data/ops/gen_nn_golden.py
Each case stores its inputs, the op's attrs (JSON), its visible outputs, a head gradient, the
gradients of the inputs, and for BatchNorm the aux states after forward+backward.
"""
import json
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")  # the reference kernels, not oneDNN's

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

rs = np.random.RandomState(42)


def r(*shape):
    return rs.randn(*shape).astype("float32")


# name: (op, attrs, [inputs], [aux], train, differentiate inputs)
CASES = {
    "conv2d_group_dilate": ("Convolution", dict(kernel=(3, 2), num_filter=4, num_group=2,
                                                stride=(2, 1), dilate=(1, 2), pad=(1, 1)),
                            [r(2, 4, 7, 6), r(4, 2, 3, 2), r(4)], [], True, [0, 1, 2]),
    "conv1d": ("Convolution", dict(kernel=(3,), num_filter=3, stride=(2,), pad=(1,)),
               [r(2, 2, 9), r(3, 2, 3), r(3)], [], True, [0, 1, 2]),
    "deconv_target": ("Deconvolution", dict(kernel=(3,), num_filter=3, stride=(2,),
                                            target_shape=(8,)),
                      [r(1, 2, 4), r(2, 3, 3)], [], True, [0, 1]),
    "deconv2d_adj": ("Deconvolution", dict(kernel=(3, 2), num_filter=4, num_group=2,
                                           stride=(2, 2), pad=(1, 0), adj=(1, 1), no_bias=False),
                     [r(2, 2, 3, 4), r(2, 2, 3, 2), r(4)], [], True, [0, 1, 2]),
    "pool_full_avg_incl": ("Pooling", dict(kernel=(3, 2), stride=(2, 2), pad=(1, 0),
                                           pool_type="avg", pooling_convention="full"),
                           [r(1, 2, 8, 5)], [], True, [0]),
    "pool_full_avg_excl": ("Pooling", dict(kernel=(3, 2), stride=(2, 2), pad=(1, 0),
                                           pool_type="avg", pooling_convention="full",
                                           count_include_pad=False),
                           [r(1, 2, 8, 5)], [], True, [0]),
    "pool_max_pad": ("Pooling", dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1)),
                     [r(2, 2, 5, 6)], [], True, [0]),
    "pool_lp3": ("Pooling", dict(kernel=(2,), stride=(2,), pool_type="lp", p_value=3),
                 [r(1, 2, 6)], [], True, [0]),
    "pool_global_sum": ("Pooling", dict(global_pool=True, pool_type="sum", kernel=(1, 1)),
                        [r(2, 3, 4, 5)], [], True, [0]),
    "bn_train": ("BatchNorm", dict(fix_gamma=False, output_mean_var=True, momentum=0.8),
                 [r(4, 3, 2, 5), r(3), r(3)], [r(3), np.abs(r(3)) + 0.5], True, [0, 1, 2]),
    "bn_fix_gamma_axis": ("BatchNorm", dict(axis=-1), [r(5, 2, 3), r(3), r(3)],
                          [r(3), np.abs(r(3)) + 0.5], True, [0, 1, 2]),
    "bn_global": ("BatchNorm", dict(fix_gamma=False, use_global_stats=True,
                                    output_mean_var=True),
                  [r(4, 3, 5), r(3), r(3)], [r(3), np.abs(r(3)) + 0.5], True, [0, 1, 2]),
    "bn_inference": ("BatchNorm", dict(fix_gamma=False), [r(4, 3, 5), r(3), r(3)],
                     [r(3), np.abs(r(3)) + 0.5], False, []),
    "elu": ("LeakyReLU", dict(act_type="elu", slope=0.3), [r(2, 3, 4)], [], True, [0]),
    "selu": ("LeakyReLU", dict(act_type="selu"), [r(2, 3, 4)], [], True, [0]),
    "gelu": ("LeakyReLU", dict(act_type="gelu"), [r(2, 3, 4)], [], True, [0]),
    "prelu": ("LeakyReLU", dict(act_type="prelu"), [r(2, 3, 4), r(3)], [], True, [0, 1]),
    "rrelu_inference": ("LeakyReLU", dict(act_type="rrelu"), [r(2, 3, 4)], [], False, []),
    "softrelu": ("Activation", dict(act_type="softrelu"), [r(2, 3, 4)], [], True, [0]),
    "softsign": ("Activation", dict(act_type="softsign"), [r(2, 3, 4)], [], True, [0]),
    "softmax_length": ("softmax", dict(use_length=True, axis=1, temperature=2.0),
                       [r(2, 4, 3), np.array([[1, 4, 2], [3, 0, 4]], dtype="int32")], [], True,
                       [0]),
    "log_softmax": ("log_softmax", dict(axis=0), [r(3, 4)], [], True, [0]),
    "softmax_activation": ("SoftmaxActivation", dict(mode="instance"), [r(2, 3, 4)], [], True,
                           [0]),
    "softmax_activation_channel": ("SoftmaxActivation", dict(mode="channel"), [r(2, 3, 4)], [],
                                   True, [0]),
    "lrn": ("LRN", dict(nsize=3, alpha=0.1, beta=0.75, knorm=2.0), [r(2, 5, 3, 2)], [], True,
            [0]),
    "layer_norm": ("LayerNorm", dict(axis=1, output_mean_var=True), [r(2, 4, 3), r(4), r(4)], [],
                   True, [0, 1, 2]),
    "instance_norm": ("InstanceNorm", dict(eps=0.01), [r(2, 3, 4, 2), r(3), r(3)], [], True,
                      [0, 1, 2]),
    "embedding": ("Embedding", dict(input_dim=4, output_dim=3),
                  [np.array([[0, 3.7, -1], [2, 2, 9]], dtype="float32"), r(4, 3)], [], True,
                  [1]),
    "fc_no_flatten": ("FullyConnected", dict(num_hidden=4, flatten=False),
                      [r(2, 3, 5), r(4, 5), r(4)], [], True, [0, 1, 2]),
    # operators added after the first golden file
    "l2norm_instance": ("L2Normalization", dict(), [r(2, 3, 4)], [], True, [0]),
    "l2norm_channel": ("L2Normalization", dict(mode="channel"), [r(2, 3, 2, 2)], [], True, [0]),
    "l2norm_spatial": ("L2Normalization", dict(mode="spatial", eps=1e-3), [r(2, 3, 2, 2)], [],
                       True, [0]),
    "groupnorm": ("GroupNorm", dict(num_groups=2, output_mean_var=True),
                  [r(2, 4, 3), r(2), r(2)], [], True, [0, 1, 2]),
    "groupnorm_one": ("GroupNorm", dict(eps=1e-3), [r(3, 2, 2, 2), r(1), r(1)], [], True,
                      [0, 1, 2]),
    "upsampling_nearest": ("UpSampling", dict(scale=2, sample_type="nearest", num_args=1),
                           [r(1, 2, 3, 4)], [], True, [0]),
    "upsampling_concat": ("UpSampling", dict(scale=2, sample_type="nearest", num_args=2),
                          [r(1, 2, 4, 4), r(1, 3, 2, 2)], [], True, [0, 1]),
    "upsampling_sum": ("UpSampling", dict(scale=2, sample_type="nearest", num_args=2,
                                          multi_input_mode="sum"),
                       [r(1, 2, 4, 4), r(1, 2, 2, 2)], [], True, [0, 1]),
    "upsampling_bilinear": ("UpSampling", dict(scale=2, sample_type="bilinear", num_filter=2,
                                               num_args=1),
                            [r(1, 2, 3, 4), r(2, 1, 4, 4)], [], True, [0, 1]),
    "upsampling_bilinear3": ("UpSampling", dict(scale=3, sample_type="bilinear", num_filter=2,
                                                num_args=1),
                             [r(2, 2, 3, 3), r(2, 1, 5, 5)], [], True, [0, 1]),
    "crop_like": ("Crop", dict(num_args=2), [r(1, 2, 6, 7), r(1, 3, 4, 4)], [], True, [0, 1]),
    "crop_center": ("Crop", dict(num_args=1, h_w=(3, 4), center_crop=True), [r(2, 1, 6, 7)],
                    [], True, [0]),
    "crop_offset": ("Crop", dict(num_args=1, h_w=(3, 2), offset=(1, 2)), [r(1, 2, 6, 7)], [],
                    True, [0]),
    "slice_like_axes": ("slice_like", dict(axes=(0, 2)), [r(3, 4, 5), r(2, 9, 3)], [], True,
                        [0, 1]),
    "slice_like_all": ("slice_like", dict(), [r(3, 4), r(2, 2)], [], True, [0]),
    "sort_desc": ("sort", dict(axis=0, is_ascend=False), [r(4, 3)], [], True, [0]),
    "sort_flat": ("sort", dict(axis=None), [r(3, 4)], [], True, [0]),
    "argsort": ("argsort", dict(axis=1, dtype="int32"), [r(3, 5)], [], False, []),
    "smooth_l1": ("smooth_l1", dict(scalar=2.0), [r(3, 4)], [], True, [0]),
    "hard_sigmoid": ("hard_sigmoid", dict(alpha=0.3, beta=0.4), [3 * r(3, 4)], [], True, [0]),
    "softmin": ("softmin", dict(axis=0, temperature=2.0), [r(3, 4)], [], True, [0]),
    "shape_array": ("shape_array", dict(), [r(2, 3, 4)], [], False, []),
    "size_array": ("size_array", dict(), [r(2, 3, 4)], [], False, []),
    "svm_l2": ("SVMOutput", dict(margin=1.5, regularization_coefficient=0.5),
               [r(4, 5), np.array([0, 4, 2, 2], dtype="float32")], [], True, [0]),
    "svm_l1": ("SVMOutput", dict(use_linear=True, margin=0.5, regularization_coefficient=2.0),
               [r(4, 5), np.array([1, 3, 0, 4], dtype="float32")], [], True, [0]),
    "diag_vector": ("diag", dict(k=-1), [r(3)], [], True, [0]),
    "diag_matrix": ("diag", dict(k=1), [r(3, 4)], [], True, [0]),
    "diag_axes": ("diag", dict(k=-1, axis1=2, axis2=0), [r(3, 2, 4)], [], True, [0]),
    "depth_to_space": ("depth_to_space", dict(block_size=2), [r(2, 8, 2, 3)], [], True, [0]),
    "space_to_depth": ("space_to_depth", dict(block_size=2), [r(2, 2, 4, 6)], [], True, [0]),
    "moments_axes": ("moments", dict(axes=(0, 2)), [r(3, 2, 4)], [], True, [0]),
    "moments_keep": ("moments", dict(axes=(1,), keepdims=True), [r(3, 5)], [], True, [0]),
    "erfinv": ("erfinv", dict(), [np.array([[-0.95, -0.5, 0.0], [0.25, 0.7, 0.999]],
                                           dtype="float32")], [], True, [0]),
    "rcbrt": ("rcbrt", dict(), [np.abs(r(3, 4)) + 0.5], [], True, [0]),
    "gather_nd": ("gather_nd", dict(), [r(3, 4, 2), np.array([[0, 2, 2, 1], [3, 0, 0, 1]],
                                                             dtype="float32")], [], True, [0]),
    "scatter_nd": ("scatter_nd", dict(shape=(3, 4)), [r(2, 2), np.array(
        [[[0, 1], [2, 2]], [[3, 0], [1, 3]]], dtype="float32")], [], True, [0]),
    "roi_pooling": ("ROIPooling", dict(pooled_size=(3, 2), spatial_scale=0.25),
                    [r(2, 3, 9, 11), np.array([[0, 0, 0, 43, 35], [1, 4, 8, 20, 30],
                                               [1, -10, -6, 60, 70], [0, 13, 9, 13, 9],
                                               [1, 30, 30, 41, 34]], dtype="float32")],
                    [], True, [0]),
    "roi_pooling_unit": ("ROIPooling", dict(pooled_size=(2, 2), spatial_scale=1.0),
                         [r(1, 2, 5, 5), np.array([[0, 1, 1, 3, 4], [0, 0.4, 1.5, 2.5, 2.49],
                                                   [0, 2, 2, 9, 9]], dtype="float32")],
                         [], True, [0]),
}


def run(op, attrs, inputs, aux, train, wrt):
    args = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
    aux_nd = [mx.nd.array(a) for a in aux]
    for i in wrt:
        args[i].attach_grad()
    with mx.autograd.record(train_mode=train):
        outs = getattr(mx.nd, op)(*(args + aux_nd), **attrs)
    outs = outs if isinstance(outs, list) else [outs]
    head = rs.uniform(-1, 1, outs[0].shape).astype("float32")
    if wrt:
        outs[0].backward(mx.nd.array(head))
    return ([o.asnumpy() for o in outs], head, [args[i].grad.asnumpy() for i in wrt],
            [a.asnumpy() for a in aux_nd])


def main():
    store = {}
    for name, (op, attrs, inputs, aux, train, wrt) in CASES.items():
        outs, head, grads, aux_after = run(op, attrs, inputs, aux, train, wrt)
        n_out = len(outs)
        if attrs.get("act_type") == "rrelu" and not train:
            outs = outs[:1]  # MXNet leaves the inference mask uninitialised
        store[name + "/meta"] = np.array(json.dumps(dict(op=op, attrs=attrs, train=train,
                                                         wrt=wrt, n_in=len(inputs),
                                                         n_aux=len(aux), n_out=n_out,
                                                         n_compare=len(outs))))
        for i, a in enumerate(inputs + aux):
            store["%s/in%d" % (name, i)] = a
        for i, o in enumerate(outs):
            store["%s/out%d" % (name, i)] = o
        for i, g in zip(wrt, grads):
            store["%s/grad%d" % (name, i)] = g
        for i, a in enumerate(aux_after):
            store["%s/aux%d" % (name, i)] = a
        store[name + "/head"] = head
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn_golden.npz")
    np.savez_compressed(path, **store)
    print("wrote", path, len(CASES), "cases")


if __name__ == "__main__":
    main()
