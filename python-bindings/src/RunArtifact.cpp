//===- RunArtifact.cpp - Artifacts and their runs, from Python ------------===//
//
// tessel.Artifact's native half: opens an artifact with the runtime
// (TesselRuntime), binds NumPy arrays (any object with __dlpack__) as
// inputs straight from their memory (Executor::setInputFrom: no copy in
// between), runs, and hands each output's tensor to NumPy without copying
// it (the array owns the tensor). Training steps, checkpoints and the ONNX
// export are tessel-run's (the tooling library, TesselTooling). One rank in
// this process; tessel/__init__.py starts tessel-run for several.
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include "tessel/tooling/Checkpoint.h"
#include "tessel/tooling/Eval.h"
#include "tessel/tooling/Grads.h"
#include "tessel/tooling/OnnxExport.h"
#include "tessel/tooling/TrainingInfo.h"
#include "tessel/tooling/Weights.h"
#include "tessel/runtime/Runtime.h"
#include "tessel/runtime/Writable.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace tessel::python {

using namespace tessel::runtime;

namespace {

using InArray = nb::ndarray<nb::ro, nb::device::cpu>;

std::optional<DType> dtypeOf(nb::dlpack::dtype t) {
  using Code = nb::dlpack::dtype_code;
  if (t.lanes != 1)
    return std::nullopt;
  if (t.code == uint8_t(Code::Float) && t.bits == 32)
    return DType::F32;
  if (t.code == uint8_t(Code::Float) && t.bits == 64)
    return DType::F64;
  if (t.code == uint8_t(Code::Int) && t.bits == 64)
    return DType::I64;
  if (t.code == uint8_t(Code::Int) && t.bits == 32)
    return DType::I32;
  if (t.code == uint8_t(Code::Bool) && t.bits == 8)
    return DType::Bool;
  if (t.code == uint8_t(Code::Float) && t.bits == 16)
    return DType::F16;
  if (t.code == uint8_t(Code::Bfloat) && t.bits == 16)
    return DType::BF16;
  return std::nullopt;
}

nb::dlpack::dtype dlpackOf(DType t) {
  switch (t) {
  case DType::F32:
    return nb::dtype<float>();
  case DType::F64:
    return nb::dtype<double>();
  case DType::I64:
    return nb::dtype<int64_t>();
  case DType::I32:
    return nb::dtype<int32_t>();
  case DType::Bool:
    return nb::dtype<bool>();
  case DType::F16:
    return nb::dlpack::dtype{uint8_t(nb::dlpack::dtype_code::Float), 16, 1};
  case DType::BF16: // toNumpy widens bf16 first: numpy has none
    return nb::dlpack::dtype{uint8_t(nb::dlpack::dtype_code::Bfloat), 16, 1};
  }
  return nb::dtype<float>();
}

/// "uint8", "int16", ...: a dtype the runtime has no name for.
std::string foreignName(nb::dlpack::dtype t) {
  using Code = nb::dlpack::dtype_code;
  const char *kind = t.code == uint8_t(Code::Int)      ? "int"
                     : t.code == uint8_t(Code::UInt)   ? "uint"
                     : t.code == uint8_t(Code::Float)  ? "float"
                     : t.code == uint8_t(Code::Bfloat) ? "bfloat"
                     : t.code == uint8_t(Code::Complex) ? "complex"
                     : t.code == uint8_t(Code::Bool)   ? "bool"
                                                       : "?";
  return std::string(kind) + std::to_string(t.bits);
}

/// The tensor, as a NumPy array that owns it (no copy; a bf16 tensor is
/// widened to f32, exactly: numpy has no bf16).
nb::object toNumpy(Tensor t) {
  t = widenBf16(std::move(t));
  auto *owned = new Tensor(std::move(t));
  nb::capsule owner(owned, [](void *p) noexcept {
    delete static_cast<Tensor *>(p);
  });
  std::vector<size_t> shape(owned->shape().begin(), owned->shape().end());
  nb::ndarray<nb::numpy> array(owned->data(), shape.size(), shape.data(),
                               owner, nullptr, dlpackOf(owned->dtype()));
  return nb::cast(array, nb::rv_policy::reference);
}

/// The artifact's lock, taken without the GIL: a run releases the GIL
/// while it executes, and a second thread's call on the same artifact waits
/// here (not holding the GIL) instead of racing on the executor.
class Locked {
public:
  explicit Locked(std::mutex &m) {
    nb::gil_scoped_release release;
    lock = std::unique_lock<std::mutex>(m);
  }

private:
  std::unique_lock<std::mutex> lock;
};

class RunArtifact {
public:
  RunArtifact(const std::string &path, int threads, bool verify)
      : path(path), threads(threads) {
    if (threads < 1)
      raise("RuntimeError",
            "threads must be >= 1, got " + std::to_string(threads));
    LoadOptions lo;
    lo.verifyChecksums = verify;
    if (Status s = Artifact::open(path, artifact, lo); !s)
      raise("RuntimeError", s.message());
    if (Status s = tessel::tooling::readTrainingInfo(path, training, hasTraining);
        !s)
      raise("RuntimeError", s.message());
  }

  int numRanks() {
    check();
    return artifact->numRanks();
  }

  /// (name, dtype, shape) of rank 0's inputs or outputs.
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>>
  signature(bool outputs) {
    const Program &p = program();
    std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> r;
    for (const auto &[name, id] : outputs ? p.outputs : p.inputs)
      r.emplace_back(name, dtypeName(p.buffers[id].dtype), p.buffers[id].shape);
    return r;
  }

  std::vector<std::string> stateNames() {
    std::vector<std::string> r;
    for (const auto &[name, id] : program().states)
      r.push_back(name);
    return r;
  }

  /// One run of rank 0's program (an artifact of one rank).
  nb::dict run(nb::dict inputs) {
    Locked locked(mutex);
    Executor &e = executor();
    bind(e, inputs);
    runOnce(e, "");
    nb::dict out;
    for (const auto &[name, id] : e.program().outputs) {
      Tensor t;
      if (Status s = e.getOutput(name, t); !s)
        raise("RuntimeError", s.message());
      out[nb::str(name.c_str())] = toNumpy(std::move(t));
    }
    return out;
  }

  /// One training step: the states carry over; returns the output 'loss'.
  float step(nb::dict batch) {
    Locked locked(mutex);
    Executor &e = executor("step()");
    int lossId = e.program().findOutput("loss");
    if (lossId < 0 || e.program().buffers[lossId].dtype != DType::F32 ||
        e.program().buffers[lossId].numel != 1)
      raise("RuntimeError",
            path + " has no scalar output 'loss' (its outputs: " +
                Program::namesOf(e.program().outputs) +
                "): compile it with train=dict(...) (tesselc --train)");
    bind(e, batch);
    runOnce(e, "step " + std::to_string(steps + 1) + ": ");
    ++steps;
    Tensor t;
    if (Status s = e.getOutput("loss", t); !s)
      raise("RuntimeError", s.message());
    return t.data<float>()[0];
  }

  /// The evaluation program (tesselc --train --eval-program, ART/eval) on
  /// each batch with the training's current parameters: the mean of the
  /// batches' losses. No state changes.
  double evaluate(nb::list batches) {
    Locked locked(mutex);
    Executor &e = executor("evaluate()");
    if (nb::len(batches) == 0)
      raise("InputError", "evaluate() needs at least one batch");
    if (!evalExec) {
      std::unique_ptr<Artifact> a;
      if (Status s = tessel::tooling::openEvalArtifact(path, a); !s)
        raise("RuntimeError", "evaluate(): " + s.message() +
                                  " (in Python: train=dict(..., "
                                  "eval_program=True))");
      std::shared_ptr<const Program> p;
      if (Status s = a->loadProgram(0, p); !s)
        raise("RuntimeError", s.message());
      ExecutorOptions eo;
      eo.threads = threads;
      if (Status s = createExecutor("cpu", p, eo, evalExec); !s)
        raise("RuntimeError", s.message());
    }
    if (Status s = tessel::tooling::copyStates(e, *evalExec); !s)
      raise("RuntimeError", "evaluate(): " + s.message());
    double sum = 0;
    size_t i = 0;
    for (nb::handle b : batches) {
      if (!nb::isinstance<nb::dict>(b))
        raise("InputError", "evaluate() takes batches as {name: array}, got " +
                                std::string(nb::type_name(b.type()).c_str()));
      bind(*evalExec, nb::borrow<nb::dict>(b));
      runOnce(*evalExec, "evaluate() batch " + std::to_string(i) + ": ");
      Tensor t;
      if (Status s = evalExec->getOutput("loss", t); !s)
        raise("RuntimeError", s.message());
      sum += static_cast<double>(t.data<float>()[0]);
      ++i;
    }
    return sum / static_cast<double>(i);
  }

  nb::object state(const std::string &name) {
    Locked locked(mutex);
    Tensor t;
    if (Status s = executor("state()").getState(name, t); !s)
      raise("RuntimeError", s.message());
    return toNumpy(std::move(t));
  }

  /// tessel-run --save DIR after the steps so far (rank 0 of 1).
  void saveCheckpoint(const std::string &dir) {
    Locked locked(mutex);
    Executor &e = executor("save_checkpoint()");
    if (Status s = tessel::tooling::recoverCheckpointDir(dir, true); !s)
      raise("RuntimeError", s.message());
    tessel::tooling::CheckpointInfo info;
    info.step = steps;
    info.dataPosition = steps;
    info.ranks = 1;
    tessel::tooling::CheckpointGroup group;
    if (Status s = tessel::tooling::saveCheckpoint(e, dir, info, group); !s)
      raise("RuntimeError", "save_checkpoint " + dir + ": " + s.message());
  }

  /// tessel-run --resume DIR: the states and the step count.
  void loadCheckpoint(const std::string &dir) {
    Locked locked(mutex);
    Executor &e = executor("load_checkpoint()");
    tessel::tooling::CheckpointInfo info;
    if (Status s = tessel::tooling::recoverCheckpointDir(dir, false); !s)
      raise("RuntimeError", s.message());
    if (Status s = tessel::tooling::readCheckpointInfo(dir, info); !s)
      raise("RuntimeError", "load_checkpoint " + dir + ": " + s.message());
    if (Status s = tessel::tooling::loadCheckpoint(e, dir, 0, 1); !s)
      raise("RuntimeError", s.message());
    steps = info.step;
  }

  /// tessel-run --export-onnx FILE: the source model with the trained
  /// tensors, through a temporary checkpoint as tessel-run does.
  void exportOnnx(const std::string &file, bool external) {
    Locked locked(mutex);
    Executor &e = executor("export_onnx()");
    if (!hasTraining || training.source_model().empty())
      raise("RuntimeError",
            "export_onnx " + file + ": " + path +
                " has no source model to write the trained tensors into "
                "(compile it with train=dict(...) from an ONNX model)");
    withSavedStates(e, file, "export_onnx", [&](const auto &saved) {
      tessel::tooling::ExportOptions eo;
      eo.external = external;
      return tessel::tooling::exportOnnx(path, training, saved, file, eo);
    });
  }

  /// tessel-run --save-weights FILE: the trained parameters under PyTorch's
  /// names. Returns the notes on parameters the export holds only in part.
  std::vector<std::string> saveWeights(const std::string &file) {
    Locked locked(mutex);
    Executor &e = executor("save_weights()");
    if (!hasTraining || training.tensors_size() == 0)
      raise("RuntimeError", "save_weights " + file + ": " + path +
                                " trains no tensor of a model (compile it "
                                "with train=dict(...) from an ONNX model)");
    if (Status s = checkWritable("save_weights", file); !s)
      raise("RuntimeError", s.message());
    std::vector<std::string> notes;
    withSavedStates(e, file, "save_weights", [&](const auto &saved) {
      size_t names = 0;
      return tessel::tooling::saveWeights(training, saved, file, notes, names);
    });
    return notes;
  }

  /// Runs `write` on the states after the steps so far, through a temporary
  /// checkpoint beside `file` (removed after), as tessel-run does.
  template <typename F>
  void withSavedStates(Executor &e, const std::string &file,
                       const std::string &what, F write) {
    std::string dir = file + ".states";
    tessel::tooling::CheckpointInfo info;
    info.step = steps;
    info.dataPosition = steps;
    tessel::tooling::CheckpointGroup group;
    Status s = tessel::tooling::removeCheckpointDir(dir);
    if (s)
      s = tessel::tooling::saveCheckpoint(e, dir, info, group);
    tessel::tooling::SavedStates saved;
    if (s)
      s = saved.read(dir);
    if (s)
      s = write(saved);
    saved = tessel::tooling::SavedStates();
    (void)tessel::tooling::removeCheckpointDir(dir);
    if (!s)
      raise("RuntimeError", what + " " + file + ": " + s.message());
  }

  void close() {
    Locked locked(mutex);
    evalExec.reset();
    exec.reset();
    prog.reset();
    artifact.reset();
    closed = true;
  }

  /// Where the last run read input `name` from (the array's own memory).
  uintptr_t inputAddress(const std::string &name) {
    auto it = lastAddress.find(name);
    return it == lastAddress.end() ? 0 : it->second;
  }

  std::string path;
  int threads;
  int64_t steps = 0;

private:
  void check() {
    if (closed)
      raise("ClosedError", "the artifact " + path + " is closed");
  }

  const Program &program() {
    check();
    if (!prog)
      if (Status s = artifact->loadProgram(0, prog); !s)
        raise("RuntimeError", s.message());
    return *prog;
  }

  /// Rank 0's executor, made on first use; `what` says which call (a run
  /// of several ranks goes to tessel-run, the others need one rank).
  Executor &executor(const char *what = "") {
    const Program &p = program();
    (void)p;
    int compiled = artifact->numRanks();
    if (compiled != 1)
      raise("RuntimeError",
            path + " was compiled for " + std::to_string(compiled) +
                " ranks, but 1 was started; " +
                (*what ? std::string(what) +
                             " runs artifacts of one rank in this process "
                             "(several ranks train with tessel-run -n " +
                             std::to_string(compiled) + " --steps N)"
                       : "run it with ranks=" + std::to_string(compiled)));
    if (!exec) {
      ExecutorOptions eo;
      eo.threads = threads;
      if (Status s = createExecutor("cpu", prog, eo, exec); !s)
        raise("RuntimeError", s.message());
    }
    return *exec;
  }

  /// Binds `inputs` to `e`'s program.
  void bind(Executor &e, nb::dict inputs) {
    forEachInput(e.program(), inputs,
                 [&](const std::string &name, DType dt, const Shape &shape,
                     const void *data) {
                   if (Status s = e.setInputFrom(name, dt, shape, data); !s)
                     raise("InputError", s.message());
                   lastAddress[name] = reinterpret_cast<uintptr_t>(data);
                 });
  }

public:
  /// The checks of a run, binding nothing (before tessel-run's ranks start).
  void checkInputs(nb::dict inputs) {
    Locked locked(mutex);
    forEachInput(program(), inputs,
                 [](const std::string &, DType, const Shape &, const void *) {});
  }

private:
  /// Checks every input of `p` in `inputs` (present, known, an array of the
  /// right dtype and shape, C-contiguous; labels in range) and hands each
  /// to `use`. An InputError names the first one at fault.
  template <typename Use>
  void forEachInput(const Program &p, nb::dict inputs, Use use) {
    for (auto [key, value] : inputs) {
      if (!nb::isinstance<nb::str>(key))
        raise("InputError", "input names are strings, got " +
                                std::string(nb::type_name(key.type()).c_str()));
      std::string name = nb::cast<std::string>(key);
      if (p.findInput(name) < 0)
        raise("InputError", "unknown input '" + name +
                                "' (the program's inputs: " +
                                Program::namesOf(p.inputs) + ")");
    }
    for (const auto &[name, id] : p.inputs) {
      const BufferInfo &b = p.buffers[id];
      nb::handle value = PyDict_GetItemString(inputs.ptr(), name.c_str());
      if (!value.is_valid())
        raise("InputError", "missing input '" + name + "' (" +
                                typeToString(b.dtype, b.shape) + ")");
      InArray a;
      if (!nb::try_cast<InArray>(value, a, false))
        raise("InputError",
              "input '" + name + "': expected a NumPy array (or an object "
              "with __dlpack__) of " + typeToString(b.dtype, b.shape) +
                  ", got " + std::string(nb::type_name(value.type()).c_str()));
      Shape shape(a.ndim());
      for (size_t i = 0; i < a.ndim(); ++i)
        shape[i] = static_cast<int64_t>(a.shape(i));
      std::optional<DType> dt = dtypeOf(a.dtype());
      // A bf16 input takes f32 too (numpy has no bf16; Executor rounds it).
      const bool widened = dt == DType::F32 && b.dtype == DType::BF16;
      if (!dt || (*dt != b.dtype && !widened) || shape != b.shape)
        raise("InputError",
              "input '" + name + "': expected " +
                  typeToString(b.dtype, b.shape) + ", got " +
                  (dt ? std::string(dtypeName(*dt))
                      : foreignName(a.dtype())) +
                  " " + shapeToString(shape));
      // Row-major and dense, or refused: the executor reads the array's
      // memory as it is.
      int64_t expect = 1;
      for (size_t i = a.ndim(); i-- > 0;) {
        if (a.shape(i) != 1 && a.stride(i) != expect)
          raise("InputError",
                "input '" + name + "': the array is not C-contiguous (strides "
                "in elements: " + stridesOf(a) + "); pass "
                "numpy.ascontiguousarray(...) of it");
        expect *= static_cast<int64_t>(a.shape(i));
      }
      if (hasTraining && name == training.labels_input()) {
        Tensor labels = Tensor::fromData(*dt, shape, a.data());
        if (Status s = tessel::tooling::checkLabels(training, labels,
                                                "input " + name);
            !s)
          raise("InputError", s.message());
      }
      use(name, *dt, shape, a.data());
    }
  }

  static std::string stridesOf(const InArray &a) {
    std::string s;
    for (size_t i = 0; i < a.ndim(); ++i)
      s += (i ? ", " : "") + std::to_string(a.stride(i));
    return "[" + s + "]";
  }

  void runOnce(Executor &e, const std::string &prefix) {
    Status s = Status::ok();
    {
      nb::gil_scoped_release release;
      s = e.run();
    }
    if (!s)
      raise("RuntimeError", prefix + s.message());
  }

  std::unique_ptr<Artifact> artifact;
  std::shared_ptr<const Program> prog;
  std::unique_ptr<Executor> exec;
  std::unique_ptr<Executor> evalExec; // evaluate()'s, made at its first call
  tessel::artifact::TrainingInfo training;
  bool hasTraining = false;
  bool closed = false;
  std::unordered_map<std::string, uintptr_t> lastAddress;
  std::mutex mutex;
};

} // namespace

void bindArtifact(nb::module_ &m) {
  nb::class_<RunArtifact>(m, "RunArtifact",
                          "An opened artifact and its rank-0 executor.")
      .def(nb::init<const std::string &, int, bool>(), nb::arg("path"),
           nb::arg("threads") = 1, nb::arg("verify") = true)
      .def_ro("path", &RunArtifact::path)
      .def_ro("threads", &RunArtifact::threads)
      .def_ro("steps", &RunArtifact::steps)
      .def_prop_ro("num_ranks", &RunArtifact::numRanks)
      .def("inputs", [](RunArtifact &a) { return a.signature(false); })
      .def("outputs", [](RunArtifact &a) { return a.signature(true); })
      .def("state_names", &RunArtifact::stateNames)
      .def("run", &RunArtifact::run, nb::arg("inputs"))
      .def("step", &RunArtifact::step, nb::arg("batch"))
      .def("state", &RunArtifact::state, nb::arg("name"))
      .def("evaluate", &RunArtifact::evaluate, nb::arg("batches"))
      .def("save_checkpoint", &RunArtifact::saveCheckpoint, nb::arg("dir"))
      .def("load_checkpoint", &RunArtifact::loadCheckpoint, nb::arg("dir"))
      .def("export_onnx", &RunArtifact::exportOnnx, nb::arg("path"),
           nb::arg("external") = false)
      .def("save_weights", &RunArtifact::saveWeights, nb::arg("path"))
      .def("input_address", &RunArtifact::inputAddress, nb::arg("name"))
      .def("check_inputs", &RunArtifact::checkInputs, nb::arg("inputs"))
      .def("close", &RunArtifact::close);
}

} // namespace tessel::python
