"""Write optimizer_golden.npz: MXNet 1.9.1's optimizers and LR schedules on fixed inputs.

Run under an MXNet 1.9.1 venv (not in CI; the npz it writes is checked in):

    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/optimizer/gen_optimizer_golden.py

Each optimizer case is a JSON spec (`case/<name>/spec`) plus arrays:

* `case/<name>/w0/<i>`       initial weight of parameter i (key i)
* `case/<name>/g/<step>/<i>` gradient of parameter i at step `step`
* `case/<name>/w/<step>/<i>` the weight after that step
* `case/<name>/s/<step>/<i>/<slot>` every state array after that step (slots in the flattened
  order of the state: an NDArray is slot 0; a tuple lists its items, nested tuples flattened)

Spec fields: opt, kwargs, sched ([class name, kwargs] or null), shapes, dtype, names (idx2name
or null), lr_mult / wd_mult (dicts given to set_lr_mult / set_wd_mult), steps, mode
("updater": one Updater call per parameter; "batched": one Updater call with lists;
"update": optimizer.update_multi_precision called directly), devices (parameters i are
replicated on cpu(0..devices-1) under keys i*devices + k, updated device by device, as Module
does without a kvstore).

Schedules: `sched/<name>/spec` ([class name, kwargs]) and `sched/<name>/lr`, the rates returned
for num_update = 0, 1, ..., 40 called in order.
"""
import json
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizer_golden.npz")

SHAPES2 = [[3, 4], [4]]
NAMES2 = {"0": "fc_weight", "1": "fc_bias"}
SHAPES6 = [[5, 3], [5], [2, 5], [2], [3, 3], [3]]
NAMES6 = {str(i): n for i, n in enumerate(
    ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "bn_gamma", "bn_beta"])}


def case(opt, steps=3, shapes=None, names=None, mode="updater", dtype="float32", sched=None,
         lr_mult=None, wd_mult=None, devices=1, **kwargs):
    return {"opt": opt, "kwargs": kwargs, "sched": sched, "shapes": shapes or SHAPES2,
            "dtype": dtype, "names": names, "lr_mult": lr_mult or {}, "wd_mult": wd_mult or {},
            "steps": steps, "mode": mode, "devices": devices}


CASES = {
    "sgd_plain": case("sgd", learning_rate=0.1),
    "sgd_wd": case("sgd", learning_rate=0.1, wd=0.01),
    "sgd_mom_wd": case("sgd", learning_rate=0.1, momentum=0.9, wd=0.01),
    "sgd_mom_clip_rescale": case("sgd", learning_rate=0.05, momentum=0.9, wd=1e-3,
                                 clip_gradient=0.5, rescale_grad=0.125),
    "sgd_clip_norm": case("sgd", learning_rate=0.05, wd=1e-3, clip_gradient=0.3,
                          rescale_grad=0.5),
    "sgd_mom_sched": case("sgd", steps=6, learning_rate=0.2, momentum=0.8,
                          sched=["FactorScheduler", {"step": 2, "factor": 0.5}]),
    "sgd_mom_names_mult": case("sgd", steps=3, shapes=SHAPES6, names=NAMES6, mode="batched",
                               learning_rate=0.1, momentum=0.9, wd=0.01,
                               lr_mult={"fc2_weight": 0.5, "1": 2.0},
                               wd_mult={"fc1_weight": 3.0}),
    "sgd_batched6": case("sgd", steps=3, shapes=SHAPES6, mode="batched", learning_rate=0.1,
                         momentum=0.9, wd=0.005, rescale_grad=0.25),
    "sgd_update_direct": case("sgd", mode="update", learning_rate=0.1, momentum=0.5, wd=0.01),
    "sgd_mp_mom": case("sgd", dtype="float16", multi_precision=True, learning_rate=0.1,
                       momentum=0.9, wd=0.01),
    "sgd_mp_plain": case("sgd", dtype="float16", multi_precision=True, learning_rate=0.1,
                         wd=0.01, clip_gradient=1.0),
    "sgd_mp_batched": case("sgd", dtype="float16", shapes=SHAPES6, mode="batched",
                           multi_precision=True, learning_rate=0.1, momentum=0.9, wd=0.01),
    "sgd_f16_nomp": case("sgd", dtype="float16", learning_rate=0.1, momentum=0.9, wd=0.01),
    "sgd_2dev_sched": case("sgd", steps=5, devices=2, names={"0": "fc_weight", "1": "fc_weight",
                                                             "2": "fc_bias", "3": "fc_bias"},
                           learning_rate=0.1, momentum=0.9, wd=0.01,
                           sched=["MultiFactorScheduler", {"step": [2, 4], "factor": 0.1}]),
    "sgd_f64": case("sgd", dtype="float64", learning_rate=0.1, momentum=0.9, wd=0.01),
    "nag_mom": case("nag", learning_rate=0.1, momentum=0.9, wd=0.01),
    "nag_mom_clip": case("nag", learning_rate=0.1, momentum=0.9, wd=0.01, clip_gradient=0.4,
                         rescale_grad=0.5),
    "nag_plain": case("nag", learning_rate=0.1, wd=0.01),
    "nag_mp": case("nag", dtype="float16", multi_precision=True, learning_rate=0.1,
                   momentum=0.9, wd=0.01),
    "adam": case("adam", steps=4),
    "adam_wd_clip": case("adam", steps=4, learning_rate=0.01, wd=0.01, clip_gradient=0.5,
                         rescale_grad=0.5),
    "adam_sched_names": case("adam", steps=5, shapes=SHAPES6, names=NAMES6, mode="batched",
                             learning_rate=0.02, wd=0.1, beta1=0.8, beta2=0.99,
                             epsilon=1e-6,
                             sched=["PolyScheduler", {"max_update": 6, "pwr": 2}]),
    "adam_mp": case("adam", dtype="float16", multi_precision=True, learning_rate=0.01,
                    wd=0.01),
    "adagrad": case("adagrad", steps=4, learning_rate=0.1, wd=0.01),
    "adagrad_clip": case("adagrad", learning_rate=0.1, wd=0.01, clip_gradient=0.3,
                         rescale_grad=0.5, eps=1e-5),
    "rmsprop": case("rmsprop", steps=4, learning_rate=0.01, wd=0.01),
    "rmsprop_clip": case("rmsprop", steps=4, learning_rate=0.01, wd=0.01, clip_gradient=0.3,
                         rescale_grad=0.5, clip_weights=0.6, gamma1=0.95),
    "rmsprop_centered": case("rmsprop", steps=4, learning_rate=0.01, wd=0.01, centered=True,
                             gamma1=0.95, gamma2=0.9),
    "rmsprop_centered_clip": case("rmsprop", steps=4, learning_rate=0.01, centered=True,
                                  clip_gradient=0.2, clip_weights=0.7, rescale_grad=0.5),
    "adadelta": case("adadelta", steps=4, wd=0.01),
    "adadelta_clip": case("adadelta", steps=4, wd=0.01, rho=0.8, epsilon=1e-4,
                          clip_gradient=0.3, rescale_grad=0.5),
    "adamax": case("adamax", steps=4, wd=0.01),
    "adamax_clip": case("adamax", steps=4, wd=0.01, clip_gradient=0.3, rescale_grad=0.5,
                        learning_rate=0.01),
    "nadam": case("nadam", steps=4, wd=0.01),
    "nadam_clip": case("nadam", steps=4, wd=0.01, clip_gradient=0.3, rescale_grad=0.5,
                       schedule_decay=0.01),
    "nadam_2param_batched": case("nadam", steps=3, mode="batched", wd=0.01),
    "signum": case("signum", steps=4, wd=0.01),
    "signum_wdlh_clip": case("signum", steps=4, wd=0.01, wd_lh=0.05, clip_gradient=0.3,
                             rescale_grad=0.5),
    "signsgd": case("signum", steps=3, momentum=0.0, wd=0.01),
    "ftrl": case("ftrl", steps=4, wd=0.01),
    "ftrl_clip": case("ftrl", steps=4, wd=0.01, lamda1=0.05, beta=0.5, learning_rate=0.2,
                      clip_gradient=0.3, rescale_grad=0.5),
    "test": case("test", steps=2, rescale_grad=0.5),
    # added later (appended, so the earlier cases keep their draws)
    "ftml": case("ftml", steps=4, learning_rate=0.01, wd=0.01),
    "ftml_clip": case("ftml", steps=4, learning_rate=0.02, beta1=0.5, beta2=0.99, epsilon=1e-6,
                      clip_gradient=0.3, rescale_grad=0.5, wd=0.001),
    "dcasgd": case("dcasgd", steps=4, learning_rate=0.1, wd=0.01),
    "dcasgd_clip": case("dcasgd", steps=4, learning_rate=0.1, lamda=0.1, clip_gradient=0.3,
                        rescale_grad=0.5),
    "groupadagrad": case("groupadagrad", steps=4, shapes=[[3, 4], [5, 2]], learning_rate=0.1),
    "groupadagrad_clip": case("groupadagrad", steps=4, shapes=[[3, 4], [5, 2]],
                              learning_rate=0.1, eps=1e-3, clip_gradient=0.3, rescale_grad=0.5),
    "lamb": case("lamb", steps=4, learning_rate=0.01, wd=0.01),
    "lamb_bounds_clip": case("lamb", steps=4, learning_rate=0.02, wd=0.01, lower_bound=0.5,
                             upper_bound=1.5, bias_correction=False, clip_gradient=0.4,
                             rescale_grad=0.5, beta1=0.8, epsilon=1e-5),
    "lars": case("lars", steps=4, names=NAMES2, mode="batched", learning_rate=0.1,
                 momentum=0.9, wd=0.01, eta=0.01),
    "lars_sched_clip": case("lars", steps=4, names=NAMES2, mode="batched", learning_rate=0.1,
                            momentum=0.9, wd=0.01, eta=0.02, eps=1e-3, rescale_grad=0.5,
                            clip_gradient=0.5,
                            sched=["FactorScheduler", {"step": 1, "factor": 0.5}]),
    "lars_nomom": case("lars", steps=3, names=NAMES2, mode="batched", learning_rate=0.1,
                       eta=0.05, wd=0.001),
}

SCHEDULES = {
    "factor": ["FactorScheduler", {"step": 3, "factor": 0.5, "base_lr": 0.1}],
    "factor_floor": ["FactorScheduler", {"step": 2, "factor": 0.1, "base_lr": 0.1,
                                         "stop_factor_lr": 1e-5}],
    "factor_warm": ["FactorScheduler", {"step": 5, "factor": 0.9, "base_lr": 0.05,
                                        "warmup_steps": 4, "warmup_begin_lr": 0.01}],
    "multifactor": ["MultiFactorScheduler", {"step": [3, 7, 20], "factor": 0.3, "base_lr": 0.2}],
    "multifactor_warm_const": ["MultiFactorScheduler", {
        "step": [10, 15], "factor": 0.5, "base_lr": 0.1, "warmup_steps": 5,
        "warmup_begin_lr": 0.02, "warmup_mode": "constant"}],
    "poly": ["PolyScheduler", {"max_update": 30, "base_lr": 0.1, "pwr": 2}],
    "poly_final_warm": ["PolyScheduler", {"max_update": 25, "base_lr": 0.1, "pwr": 1.5,
                                          "final_lr": 0.01, "warmup_steps": 5,
                                          "warmup_begin_lr": 0.001}],
    "cosine": ["CosineScheduler", {"max_update": 30, "base_lr": 0.1}],
    "cosine_final_warm": ["CosineScheduler", {"max_update": 20, "base_lr": 0.1,
                                              "final_lr": 0.005, "warmup_steps": 6}],
}


def make_sched(spec):
    if spec is None:
        return None
    cls, kwargs = spec
    return getattr(mx.lr_scheduler, cls)(**kwargs)


def flatten_state(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        out = []
        for item in state:
            out.extend(flatten_state(item))
        return out
    return [state]


def run_case(name, spec, rng, out):
    dtype = np.dtype(spec["dtype"])
    kwargs = dict(spec["kwargs"])
    sched = make_sched(spec["sched"])
    if sched is not None:
        kwargs["lr_scheduler"] = sched
    if spec["names"] is not None:
        kwargs["param_idx2name"] = {int(k): v for k, v in spec["names"].items()}
    opt = mx.optimizer.create(spec["opt"], **kwargs)
    if spec["lr_mult"]:
        opt.set_lr_mult({int(k) if k.isdigit() else k: v for k, v in spec["lr_mult"].items()})
    if spec["wd_mult"]:
        opt.set_wd_mult({int(k) if k.isdigit() else k: v for k, v in spec["wd_mult"].items()})
    updater = mx.optimizer.get_updater(opt)
    devices = spec["devices"]
    weights = {}
    for i, shape in enumerate(spec["shapes"]):
        w0 = rng.uniform(-1, 1, size=shape).astype(dtype)
        out[f"case/{name}/w0/{i}"] = w0
        for k in range(devices):
            weights[i * devices + k] = mx.nd.array(w0, ctx=mx.cpu(k), dtype=dtype)
    states = {}
    for step in range(spec["steps"]):
        grads = {}
        for i, shape in enumerate(spec["shapes"]):
            g = rng.uniform(-1.5, 1.5, size=shape).astype(dtype)
            out[f"case/{name}/g/{step}/{i}"] = g
            for k in range(devices):
                grads[i * devices + k] = mx.nd.array(g, ctx=mx.cpu(k), dtype=dtype)
        for k in range(devices):
            keys = [i * devices + k for i in range(len(spec["shapes"]))]
            if spec["mode"] == "batched":
                updater(keys, [grads[j] for j in keys], [weights[j] for j in keys])
            elif spec["mode"] == "updater":
                for j in keys:
                    updater(j, grads[j], weights[j])
            else:
                opt._set_current_context(k)
                for j in keys:
                    if j not in states:
                        states[j] = opt.create_state_multi_precision(j, weights[j])
                    opt.update_multi_precision(j, weights[j], grads[j], states[j])
        all_states = states if spec["mode"] == "update" else updater.states
        for i in range(len(spec["shapes"])):
            key = i * devices + devices - 1
            out[f"case/{name}/w/{step}/{i}"] = weights[key].asnumpy()
            if devices > 1:
                assert np.array_equal(weights[key].asnumpy(), weights[i * devices].asnumpy())
            for slot, arr in enumerate(flatten_state(all_states[key])):
                out[f"case/{name}/s/{step}/{i}/{slot}"] = arr.asnumpy()
    out[f"case/{name}/num_update"] = np.array([opt.num_update])
    out[f"case/{name}/spec"] = np.array(json.dumps(spec))


def main():
    rng = np.random.RandomState(20240601)
    out = {}
    for name, spec in CASES.items():
        run_case(name, spec, rng, out)
    for name, spec in SCHEDULES.items():
        sched = make_sched(spec)
        out[f"sched/{name}/lr"] = np.array([sched(n) for n in range(41)], dtype=np.float64)
        out[f"sched/{name}/spec"] = np.array(json.dumps(spec))
    np.savez_compressed(OUT, **out)
    print(f"wrote {len(CASES)} optimizer cases and {len(SCHEDULES)} schedules to {OUT}")


if __name__ == "__main__":
    main()
