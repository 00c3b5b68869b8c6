"""tests/keras' yardstick: a Keras model's accuracy and loss on an mtrain
data file (x: uint8 scaled by 1/255, as mtrain scales it; y: class ids)
against the figures `mtrain eval` printed for the same weights."""
import h5py
import numpy as np


def eval_figures(path, which):
    """(loss, acc) of the `mtrain eval` output in path for weights `which`."""
    for line in open(path):
        words = line.split()
        if which in words and "acc" in words:
            at = words.index(which)
            return float(words[at + 2]), float(words[at + 4])
    raise AssertionError(f"no {which} figures in {path}")


def agree(model, test, loss_want, acc_want, label):
    """Keras' predictions on test, shaped as the model's input, are
    probabilities whose accuracy is acc_want within 5 images in 10,000 and
    whose loss is loss_want within 5e-4: the products sum in another order."""
    with h5py.File(test, "r") as f:
        x = f["x"][()].astype(np.float32) * np.float32(1 / 255)
        y = f["y"][()]
    x = x.reshape((-1,) + tuple(model.input_shape[1:]))
    p = model.predict(x, batch_size=1000, verbose=0)
    assert np.allclose(p.sum(1), 1, atol=1e-4), f"{label}: the output is not probabilities"
    acc = float((p.argmax(1) == y).mean())
    loss = float(-np.log(p[np.arange(len(y)), y].astype(np.float64)).mean())
    print(f"{label}: Keras accuracy {acc:.4f} loss {loss:.4f}, "
          f"mtrain eval {acc_want:.4f} {loss_want:.4f}")
    assert abs(acc - acc_want) <= 5 / 10000 + 1e-9, (label, acc, acc_want)
    assert abs(loss - loss_want) <= 5e-4, (label, loss, loss_want)
