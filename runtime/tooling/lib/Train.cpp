//===- Train.cpp - tessel-run's training loop -----------------------------===//
#include "tessel/tooling/Train.h"
#include "tessel/tooling/TrainingInfo.h"

#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Safetensors.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

using namespace tessel::runtime;

namespace tessel::tooling {

namespace {
/// The input a language model's token ids feed (--data-lm, --data-tokens):
/// `input_ids` where the program has it (transformers' name), else its one
/// integer input besides `labels`, whatever the export named it (`x`,
/// `tokens`). Without one (none, or several), `input_ids`, which the feed
/// then reports missing, listing the program's inputs.
std::string tokenInput(const Program &program) {
  if (program.findInput("input_ids") >= 0)
    return "input_ids";
  std::string found;
  int count = 0;
  for (const auto &[name, id] : program.inputs) {
    const DType t = program.buffers[id].dtype;
    if (name != "labels" && (t == DType::I64 || t == DType::I32)) {
      found = name;
      ++count;
    }
  }
  return count == 1 ? found : "input_ids";
}
} // namespace

Status StepFeeds::add(const Program &program, Feed f, bool lm) {
  int id = program.findInput(f.input);
  if (id < 0)
    return Status::error(f.what + ": the program has no input '" + f.input +
                         "' (its inputs: " + Program::namesOf(program.inputs) + ")");
  for (const Feed &g : list)
    if (g.input == f.input)
      return Status::error("input '" + f.input + "' is fed twice (" + g.what +
                           ", " + f.what + ")");
  const BufferInfo &b = program.buffers[id];
  const Shape &fs = f.data.shape();
  const bool dtypeOk = f.data.dtype() == b.dtype;
  if (!lm && dtypeOk && fs == b.shape) {
    f.perStep = false; // the same every step
  } else {
    // A step's row: the file's shape without its first dim (--data-lm: the
    // last dim cut to [begin, end)).
    Shape row;
    if (!fs.empty())
      row.assign(fs.begin() + 1, fs.end());
    if (lm)
      row.back() = f.end - f.begin;
    if (!dtypeOk || fs.empty() || row != b.shape || fs[0] == 0) {
      std::string why;
      if (!dtypeOk) {
        why = "the dtypes differ";
      } else if (!fs.empty() && row == b.shape) {
        why = "it has no rows";
      } else {
        Shape want = {-2};
        want.insert(want.end(), b.shape.begin(), b.shape.end());
        if (lm && want.size() > 1)
          want.back() += 1;
        std::string ws = shapeToString(want);
        ws.replace(ws.find("-2"), 2, "steps");
        why = lm ? "expected " + ws +
                       " (input_ids = [k, :, :-1], labels = [k, :, 1:])"
                 : "expected " + shapeToString(b.shape) +
                       " (fed every step) or " + ws +
                       " (row k mod steps at step k)";
      }
      return Status::error(f.what + ": input '" + f.input + "' is " +
                           typeToString(b.dtype, b.shape) + ", the file holds " +
                           typeToString(f.data.dtype(), fs) + ": " + why);
    }
    f.perStep = true;
    f.rows = fs[0];
    if (!lm) {
      f.begin = 0;
      f.end = fs.size() > 1 ? fs.back() : 1;
    }
  }
  f.staging = Tensor(b.dtype, b.shape);
  list.push_back(std::move(f));
  return Status::ok();
}

Status StepFeeds::load(const TrainOptions &o, const Program &program) {
  for (const auto &[nameArg, file] : o.data) {
    Feed f;
    f.input = nameArg;
    if (f.input.empty()) {
      if (program.inputs.size() != 1)
        return Status::error("--data " + file +
                             " has no NAME=; the program has " +
                             std::to_string(program.inputs.size()) +
                             " inputs, so each needs its name");
      f.input = program.inputs[0].first;
    }
    f.what = "--data " + f.input + "=" + file;
    if (Status s = readNpy(file, f.data); !s)
      return Status::error(f.what + ": " + s.message());
    TSL_RETURN_IF_ERROR(add(program, std::move(f), false));
  }
  if (!o.dataLm.empty()) {
    Tensor t;
    const std::string what = "--data-lm " + o.dataLm;
    if (Status s = readNpy(o.dataLm, t); !s)
      return Status::error(what + ": " + s.message());
    const Shape &ts = t.shape();
    if (t.dtype() != DType::I64 || ts.size() != 3 || ts[2] < 2)
      return Status::error(what + ": holds " + typeToString(t.dtype(), ts) +
                           ", expected i64 [steps, batch, seq+1] with seq >= 1");
    const std::string ids = tokenInput(program);
    for (int k = 0; k < 2; ++k) {
      Feed f;
      f.input = k == 0 ? ids : "labels";
      f.what = what;
      f.data = t; // shares the bytes
      f.begin = k == 0 ? 0 : 1;
      f.end = k == 0 ? ts[2] - 1 : ts[2];
      TSL_RETURN_IF_ERROR(add(program, std::move(f), true));
    }
  }
  if (!o.dataTokens.empty())
    TSL_RETURN_IF_ERROR(loadTokens(o, program));
  this->program = &program;
  // Every row's labels and gather indices, before the first step runs.
  return checkRows(program);
}

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
} // namespace

int64_t StepFeeds::tokenWindow(uint64_t seed, int64_t row, int64_t batch,
                               int64_t b, int64_t tokens, int64_t seq) {
  const uint64_t key = static_cast<uint64_t>(row) *
                           static_cast<uint64_t>(batch) +
                       static_cast<uint64_t>(b);
  const uint64_t z = splitmix64(seed ^ splitmix64(key));
  return static_cast<int64_t>(z % static_cast<uint64_t>(tokens - seq));
}

Status StepFeeds::loadTokens(const TrainOptions &o, const Program &program) {
  const std::string what = "--data-tokens " + o.dataTokens;
  int width = 0;
  if (o.tokenDtype == "uint16")
    width = 2;
  else if (o.tokenDtype == "uint32")
    width = 4;
  else
    return Status::error("--token-dtype '" + o.tokenDtype +
                         "': uint16 or uint32 (nanoGPT's .bin files are "
                         "uint16)");
  std::shared_ptr<MappedFile> map;
  if (Status s = MappedFile::open(o.dataTokens, map); !s)
    return Status::error(what + ": " + s.message());
  if (map->size() % width != 0)
    return Status::error(what + ": holds " + std::to_string(map->size()) +
                         " bytes, not a whole number of " + o.tokenDtype +
                         " tokens");
  const int64_t numTokens = static_cast<int64_t>(map->size() / width);
  int64_t batch = -1, seq = -1;
  const std::string ids = tokenInput(program);
  for (int k = 0; k < 2; ++k) {
    Feed f;
    f.input = k == 0 ? ids : "labels";
    f.what = what;
    const int id = program.findInput(f.input);
    if (id < 0)
      return Status::error(
          what + ": the program has no input '" + f.input +
          "' (its inputs: " + Program::namesOf(program.inputs) +
          "); token files feed a language model's "
          "token ids and labels");
    if (feeds(f.input))
      return Status::error("input '" + f.input + "' is fed twice (" + what +
                           " and another --data flag)");
    const BufferInfo &b = program.buffers[id];
    if ((b.dtype != DType::I64 && b.dtype != DType::I32) ||
        b.shape.size() != 2 || b.shape[0] < 1 || b.shape[1] < 1)
      return Status::error(what + ": input '" + f.input + "' is " +
                           typeToString(b.dtype, b.shape) +
                           ", not [batch, seq] integer ids");
    if (batch >= 0 && (b.shape[0] != batch || b.shape[1] != seq))
      return Status::error(
          what + ": input '" + ids + "' and labels differ in shape (" +
          shapeToString({batch, seq}) + ", " + shapeToString(b.shape) + ")");
    batch = b.shape[0];
    seq = b.shape[1];
    if (o.batch && o.batch != batch)
      return Status::error("--batch " + std::to_string(o.batch) +
                           ": the program's input '" + f.input + "' is " +
                           typeToString(b.dtype, b.shape) +
                           " (recompile at that batch)");
    if (o.seq && o.seq != seq)
      return Status::error("--seq " + std::to_string(o.seq) +
                           ": the program's input '" + f.input + "' is " +
                           typeToString(b.dtype, b.shape) +
                           " (recompile at that length)");
    if (numTokens < seq + 1)
      return Status::error(what + ": holds " + std::to_string(numTokens) +
                           " tokens, fewer than a window of seq + 1 = " +
                           std::to_string(seq + 1));
    f.perStep = true;
    f.rows = 0; // windows, not rows: no epochs
    f.tokens = map;
    f.tokenBytes = width;
    f.numTokens = numTokens;
    f.shift = k;
    f.seed = static_cast<uint64_t>(o.seed);
    f.staging = Tensor(b.dtype, b.shape);
    list.push_back(std::move(f));
  }
  return Status::ok();
}

Status StepFeeds::stageTokens(Feed &f, int64_t row) {
  const Shape &shape = f.staging.shape();
  const int64_t batch = shape[0], seq = shape[1];
  const unsigned char *base = f.tokens->data();
  const bool i64 = f.staging.dtype() == DType::I64;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start =
        tokenWindow(f.seed, row, batch, b, f.numTokens, seq) + f.shift;
    for (int64_t j = 0; j < seq; ++j) {
      const unsigned char *p = base + (start + j) * f.tokenBytes;
      uint32_t v = 0;
      if (f.tokenBytes == 2) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        v = h;
      } else {
        std::memcpy(&v, p, 4);
      }
      if (i64)
        f.staging.data<int64_t>()[b * seq + j] = v;
      else
        f.staging.data<int32_t>()[b * seq + j] = static_cast<int32_t>(v);
    }
  }
  // The windows' ids checked as the rows of a data file are (the labels
  // against the classes, the ids against the embedding's rows).
  const std::string what =
      f.what + " (the windows of data position " + std::to_string(row) + ")";
  if (training && f.input == training->labels_input())
    TSL_RETURN_IF_ERROR(checkLabels(*training, f.staging, what));
  if (program)
    TSL_RETURN_IF_ERROR(
        checkGatherIndices(*program, f.input, f.staging, what));
  return Status::ok();
}

bool StepFeeds::feeds(const std::string &name) const {
  for (const Feed &f : list)
    if (f.input == name)
      return true;
  return false;
}

void StepFeeds::stage(Feed &f, int64_t row) {
  const size_t es = dtypeSize(f.data.dtype());
  const int64_t rowElems = f.data.numElements() / f.rows;
  const Shape &fs = f.data.shape();
  const int64_t inner = fs.size() > 1 ? fs.back() : 1;
  const int64_t width = f.end - f.begin;
  const int64_t outer = inner ? rowElems / inner : 0;
  const char *src =
      static_cast<const char *>(f.data.data()) + row * rowElems * es;
  char *dst = static_cast<char *>(f.staging.data());
  for (int64_t i = 0; i < outer; ++i)
    std::memcpy(dst + i * width * es, src + (i * inner + f.begin) * es,
                width * es);
}

Status StepFeeds::checkRows(const Program &program) {
  for (Feed &f : list) {
    if (f.tokens)
      continue; // each step's windows, as they are read
    auto check = [&](const Tensor &t, const std::string &what) -> Status {
      if (training && f.input == training->labels_input())
        TSL_RETURN_IF_ERROR(checkLabels(*training, t, what));
      return checkGatherIndices(program, f.input, t, what);
    };
    if (!f.perStep) {
      TSL_RETURN_IF_ERROR(check(f.data, f.what));
      continue;
    }
    for (int64_t r = 0; r < f.rows; ++r) {
      stage(f, r);
      TSL_RETURN_IF_ERROR(check(f.staging, f.what + " (row " +
                                               std::to_string(r) + ")"));
    }
  }
  return Status::ok();
}

Status StepFeeds::bind(Executor &exec, int64_t step) {
  for (Feed &f : list) {
    if (f.tokens) {
      TSL_RETURN_IF_ERROR(stageTokens(f, step));
      TSL_RETURN_IF_ERROR(exec.setInput(f.input, f.staging));
      continue;
    }
    if (!f.perStep) {
      TSL_RETURN_IF_ERROR(exec.setInput(f.input, f.data));
      continue;
    }
    stage(f, step % f.rows);
    TSL_RETURN_IF_ERROR(exec.setInput(f.input, f.staging));
  }
  return Status::ok();
}

int64_t StepFeeds::samplesPerStep() const {
  for (const Feed &f : list)
    if (!f.staging.shape().empty())
      return f.staging.shape()[0];
  return 1;
}

int64_t StepFeeds::rows() const {
  int64_t n = 0;
  for (const Feed &f : list)
    if (f.perStep && f.rows > 0)
      n = n ? std::min(n, f.rows) : f.rows;
  return n;
}

int64_t StepFeeds::tokensPerStep() const {
  for (const Feed &f : list)
    if (f.perStep && (f.staging.dtype() == DType::I64 ||
                      f.staging.dtype() == DType::I32))
      return f.staging.numElements();
  return 0;
}

std::string StepFeeds::epochNote(int64_t row, int64_t step) const {
  for (const Feed &f : list) {
    if (!f.perStep || f.rows <= 0 || row == 0 || row % f.rows != 0)
      continue;
    return f.what + ": its " + std::to_string(f.rows) + " row" +
           (f.rows == 1 ? "" : "s") + " begin again at step " +
           std::to_string(step) + " (epoch " +
           std::to_string(row / f.rows + 1) + ")";
  }
  return "";
}

std::optional<double> scheduledLearningRate(const artifact::TrainingInfo &info,
                                            int64_t k) {
  if (info.optimizer().empty())
    return std::nullopt;
  // As -tessel-optimizer computes it (lib/Transforms/Optimizer.cpp): lr
  // times LambdaLR's factor in double, rounded once to f32.
  const double lr = info.lr();
  const std::string &kind = info.lr_schedule();
  const int64_t w = info.warmup_steps(), total = info.total_steps();
  if (kind == "linear-warmup") {
    const double f = std::min(1.0, double(k) / double(std::max<int64_t>(1, w)));
    return double(static_cast<float>(lr * f));
  }
  if (kind == "cosine") {
    k = std::min(k, total);
    double f;
    if (k < w) {
      f = double(k) / double(std::max<int64_t>(1, w));
    } else {
      double p = double(k - w) / double(std::max<int64_t>(1, total - w));
      f = std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * p)));
    }
    return double(static_cast<float>(lr * f));
  }
  return double(static_cast<float>(lr));
}

namespace {

/// "1m23s", "2h05m", "17s".
std::string formatDuration(double seconds) {
  char buf[32];
  long long s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof(buf), "%llds", s);
  return buf;
}

/// A JSON number: finite values as %.9g, others as null (JSON has no NaN).
std::string jsonNumber(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

/// --metrics: step `step`'s JSON record (its loss when the program has
/// one, the learning rate and gradient norm when known), written and
/// flushed.
Status writeMetricsLine(std::FILE *metrics, int64_t step, const float *loss,
                        std::optional<double> lr,
                        std::optional<double> gradNorm, double ms,
                        int64_t tokens, int64_t samples) {
  std::string line = "{\"step\": " + std::to_string(step);
  if (loss)
    line += ", \"loss\": " + jsonNumber(*loss);
  if (lr)
    line += ", \"lr\": " + jsonNumber(*lr);
  if (gradNorm)
    line += ", \"grad_norm\": " + jsonNumber(*gradNorm);
  line += ", \"ms\": " + jsonNumber(ms);
  if (tokens > 0)
    line += ", \"tokens_per_s\": " +
            jsonNumber(ms > 0 ? tokens * 1000.0 / ms : 0.0);
  else
    line += ", \"samples_per_s\": " +
            jsonNumber(ms > 0 ? samples * 1000.0 / ms : 0.0);
  line += "}\n";
  if (std::fputs(line.c_str(), metrics) < 0 || std::fflush(metrics) != 0)
    return Status::error("--metrics: cannot write step " +
                         std::to_string(step) + ": " + std::strerror(errno));
  return Status::ok();
}

/// "[=========>          ] 5/8 (step 9/12) loss 3.141593 12.3 ms/step"
/// on the current line of stdout, without a newline.
void drawProgressBar(int64_t done, int64_t total, int64_t step, int64_t stop,
                     const float *loss, double ms) {
  const int width = 30;
  const int filled = total > 0 ? static_cast<int>(width * done / total) : width;
  std::string bar(width, ' ');
  for (int i = 0; i < filled; ++i)
    bar[i] = '=';
  if (filled < width)
    bar[filled] = '>';
  std::printf("\r[%s] step %lld/%lld", bar.c_str(),
              static_cast<long long>(step), static_cast<long long>(stop));
  if (loss)
    std::printf(" loss %.6f", *loss);
  const double eta = ms * (total - done) / 1000.0;
  std::printf(" %.1f ms/step eta %.1f s", ms, eta);
  std::fflush(stdout);
}

} // namespace

Status runSteps(Executor &exec, StepFeeds &feeds, int64_t start, int64_t stop,
                int64_t dataPosition, bool report, bool needLoss,
                const NumericsGuard &numerics, StepResults &out,
                const std::function<Status(int64_t, int64_t)> &after,
                const StepLog &log) {
  const Program &p = exec.program();
  int lossId = p.findOutput("loss");
  if (lossId >= 0 && (p.buffers[lossId].dtype != DType::F32 ||
                      p.buffers[lossId].numel != 1)) {
    if (needLoss)
      return Status::error(
          "--losses: output 'loss' is " +
          typeToString(p.buffers[lossId].dtype, p.buffers[lossId].shape) +
          ", expected one f32 (a scalar)");
    lossId = -1;
  }
  if (needLoss && lossId < 0) {
    return Status::error("--losses: the program has no output 'loss' (its "
                         "outputs: " +
                         Program::namesOf(p.outputs) + ")");
  }
  // The gradients' total norm before clipping (tesselc --clip-grad-norm).
  int normId = p.findOutput("grad_norm");
  if (normId >= 0 && (p.buffers[normId].dtype != DType::F32 ||
                      p.buffers[normId].numel != 1))
    normId = -1;
  const int64_t samples = feeds.samplesPerStep();
  const int64_t tokens = feeds.tokensPerStep();
  // The time left: the mean of this run's steps so far, times those to go.
  double runMs = 0;
  // A progress bar on stdout when it is a terminal (rank 0, reporting).
  const bool bar = report && ::isatty(STDOUT_FILENO);
  // The process's CPU time of a step beside its wall time: on a machine
  // shared with other work, the steadier of the two.
  auto cpuMs = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
  };
  for (int64_t k = start; k < stop; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpuMs();
    const int64_t row = dataPosition + (k - start);
    if (report)
      if (std::string note = feeds.epochNote(row, k + 1); !note.empty()) {
        std::fprintf(stderr, "tessel-run: %s\n", note.c_str());
        std::fflush(stderr);
      }
    TSL_RETURN_IF_ERROR(feeds.bind(exec, row));
    if (Status s = exec.run(); !s) {
      // A value found non-finite before the failure comes first.
      std::string found = numerics.finding(exec, k + 1, stop);
      return Status::error(
          found.empty() ? "step " + std::to_string(k + 1) + ": " + s.message()
                        : found + "; then: " + s.message());
    }
    float loss = 0;
    if (lossId >= 0) {
      Tensor t;
      TSL_RETURN_IF_ERROR(exec.getOutput("loss", t));
      loss = t.data<float>()[0];
      out.losses.push_back(loss);
    }
    TSL_RETURN_IF_ERROR(
        numerics.afterStep(exec, k + 1, stop, lossId >= 0 ? &loss : nullptr));
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
    const double cpu = cpuMs() - c0;
    out.ms.push_back(ms);
    runMs += ms;
    std::optional<double> lr;
    if (log.training)
      lr = scheduledLearningRate(*log.training, k);
    std::optional<double> gradNorm;
    if (normId >= 0) {
      Tensor t;
      TSL_RETURN_IF_ERROR(exec.getOutput("grad_norm", t));
      gradNorm = double(t.data<float>()[0]);
    }
    if (log.metrics)
      TSL_RETURN_IF_ERROR(writeMetricsLine(log.metrics, k + 1,
                                           lossId >= 0 ? &loss : nullptr, lr,
                                           gradNorm, ms, tokens, samples));
    if (report && log.logEvery > 0) {
      if ((k + 1) % log.logEvery == 0 || k + 1 == stop) {
        const double mean = runMs / double(k + 1 - start);
        std::string line = "tessel-run: step " + std::to_string(k + 1) + "/" +
                           std::to_string(stop);
        char buf[160];
        if (lossId >= 0) {
          std::snprintf(buf, sizeof(buf), " loss %.6f", loss);
          line += buf;
        }
        if (lr) {
          std::snprintf(buf, sizeof(buf), " lr %.4g", *lr);
          line += buf;
        }
        if (gradNorm) {
          std::snprintf(buf, sizeof(buf), " grad_norm %.4g", *gradNorm);
          line += buf;
        }
        std::snprintf(buf, sizeof(buf), " %.1f ms/step", mean);
        line += buf;
        if (tokens > 0)
          std::snprintf(buf, sizeof(buf), " %.0f tokens/s",
                        mean > 0 ? tokens * 1000.0 / mean : 0.0);
        else
          std::snprintf(buf, sizeof(buf), " %.1f samples/s",
                        mean > 0 ? samples * 1000.0 / mean : 0.0);
        line += buf;
        line += " " + std::to_string(100 * (k + 1) / std::max<int64_t>(1, stop)) +
                "% eta " + formatDuration(mean * double(stop - k - 1) / 1000.0);
        std::fprintf(stderr, "%s\n", line.c_str());
        std::fflush(stderr);
      }
    } else if (report) {
      const double rate = ms > 0 ? samples * 1000.0 / ms : 0.0;
      if (bar)
        std::fputs("\r\033[K", stdout); // the bar gives way to the line
      std::fflush(stdout);
      if (lossId >= 0)
        std::fprintf(stderr,
                     "tessel-run: step %lld/%lld loss %.6f %.3f ms/step "
                     "%.1f samples/s (%.3f ms CPU)\n",
                     static_cast<long long>(k + 1),
                     static_cast<long long>(stop), loss, ms, rate, cpu);
      else
        std::fprintf(stderr,
                     "tessel-run: step %lld/%lld %.3f ms/step %.1f samples/s "
                     "(%.3f ms CPU)\n",
                     static_cast<long long>(k + 1),
                     static_cast<long long>(stop), ms, rate, cpu);
      std::fflush(stderr);
      if (bar)
        drawProgressBar(k + 1 - start, stop - start, k + 1, stop,
                        lossId >= 0 ? &loss : nullptr, ms);
    }
    if (after)
      TSL_RETURN_IF_ERROR(after(k + 1, row + 1));
  }
  if (bar) {
    std::fputs("\n", stdout);
    std::fflush(stdout);
  }
  return Status::ok();
}

double peakRssMiB() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

Status reportPeakRss(Communicator *comm, int rank, int worldSize,
                     bool report) {
  std::vector<float> peaks(worldSize, 0.0f);
  float mine = static_cast<float>(peakRssMiB());
  if (worldSize > 1 && comm) {
    TensorView in(&mine, DType::F32, Shape{1});
    TensorView all(peaks.data(), DType::F32, Shape{worldSize});
    if (Status s = comm->allGather(in, all, 0); !s)
      return Status::error("gathering each rank's peak RSS: " + s.message());
  } else {
    peaks.assign(1, mine);
  }
  if (!report)
    return Status::ok();
  for (size_t r = 0; r < peaks.size(); ++r)
    std::fprintf(stderr, "tessel-run: peak RSS %.1f MiB (rank %zu's process)\n",
                 peaks[r], peaks.size() == 1 ? size_t(rank) : r);
  std::fflush(stderr);
  return Status::ok();
}

} // namespace tessel::tooling
