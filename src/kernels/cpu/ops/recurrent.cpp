// Recurrent networks: aten::lstm.input and aten::gru.input, the multi-layer,
// optionally bidirectional LSTM and GRU that nn.LSTM and nn.GRU call, with
// LSTM's projections (proj_size). Kept whole, an RNN is one node instead of
// a few ops per cell and timestep.
//
// The fast kernel runs as ONNX Runtime's and oneDNN's fused RNNs do. Per
// layer and direction, one product projects every timestep's input at once
// (X[T * B, in] @ W_ih^T + b_ih), with W_ih packed once per Session; then
// each timestep takes one small product h[B, P] @ W_hh^T + b_hh (at batch 1,
// a pass streaming W_hh^T, transposed once per Session) and one vectorized
// pass of gate math that writes h (and c). The two directions of a
// bidirectional layer run on two threads at once; a single direction's
// timesteps are shared by the pool's threads, each taking a slice of the
// hidden units and keeping its part of W_hh^T in its core's cache. The
// reference is the cell equations in double, step by step.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/engines/product.h"
#include "kernels/cpu/onednn/onednn.h"
#include "kernels/cpu/util/cpu_dispatch.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/cpu/util/vec_math.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

enum class Cell { Lstm, Gru };

// An RNN call: its sizes and where its arguments lie among the flat inputs
// (input, hx: h_0 and for LSTM c_0, then params). Sequences are matrices of
// rows in the input's order: row (t, b) is t * B + b, or b * T + t with
// batch_first. Each layer's output has D * P columns, direction d's in
// [d * P, (d + 1) * P).
struct Rnn {
  Cell cell = Cell::Lstm;
  int64_t layers = 0, directions = 1, steps = 0, batch = 0, input_size = 0;
  int64_t hidden = 0;  // H: c's size, and h's before a projection
  int64_t output = 0;  // P: h's size (proj_size, or H without projections)
  int64_t gates = 4;   // LSTM's i, f, g, o; GRU's r, z, n
  bool has_biases = true, projections = false, batch_first = false;
  size_t h0 = 1, c0 = 2, params = 3;
  int64_t per_direction = 4;  // params of one layer and direction

  int64_t gate_rows() const { return gates * hidden; }
  int64_t layer_input(int64_t layer) const { return layer == 0 ? input_size : directions * output; }
  int64_t rows() const { return steps * batch; }
  int64_t row(int64_t t, int64_t b) const { return batch_first ? b * steps + t : t * batch + b; }
  int64_t batch_step() const { return batch_first ? steps : 1; }  // rows from batch b to b + 1
  // Flat input index of param k (0 w_ih, 1 w_hh, 2 b_ih, 3 b_hh, 4 w_hr) of a layer's direction.
  size_t param(int64_t layer, int64_t direction, int k) const {
    const int64_t at = k == 4 ? per_direction - 1 : k;
    return params + static_cast<size_t>((layer * directions + direction) * per_direction + at);
  }
};

const char* const kParamNames[] = {"w_ih", "w_hh", "b_ih", "b_hh", "w_hr"};

// h_0 (and c_0): [L * D, B, P] (and [L * D, B, H]) in the input's dtype.
// Sets the hidden sizes from them: ATen tells a projection by h_0's size
// differing from c_0's.
void check_states(Rnn& r, std::span<const TensorMeta* const> in) {
  const TensorMeta& x = *in[0];
  const TensorMeta& h0 = *in[r.h0];
  const TensorMeta& c0 = *in[r.cell == Cell::Lstm ? r.c0 : r.h0];
  const char* h0_name = r.cell == Cell::Lstm ? "hx[0] (h_0)" : "hx";
  for (auto [t, name] : {std::pair{&h0, h0_name}, {&c0, "hx[1] (c_0)"}}) {
    OPGRAPH_CHECK(t->dtype == x.dtype && t->dim() == 3, name, ": expected ", dtype_name(x.dtype),
                  "[num_layers * directions, batch, hidden] like input ", x.str(), ", got ", t->str());
  }
  r.hidden = c0.shape[2];
  r.output = h0.shape[2];
  r.projections = r.output != r.hidden;
  const int64_t states = r.layers * r.directions;
  OPGRAPH_CHECK(h0.shape == Shape({states, r.batch, r.output}), h0_name, ": expected [", states, ", ", r.batch, ", ",
                r.output, "] (num_layers * directions, batch, hidden), got ", h0.str());
  OPGRAPH_CHECK(c0.shape == Shape({states, r.batch, r.hidden}), "hx[1] (c_0): expected [", states, ", ", r.batch, ", ",
                r.hidden, "] (num_layers * directions, batch, hidden), got ", c0.str());
}

// params: per layer and direction w_ih [G * H, in], w_hh [G * H, P], then
// with biases b_ih and b_hh [G * H], then with projections w_hr [P, H].
void check_params(const Rnn& r, std::span<const TensorMeta* const> in, size_t count) {
  const int64_t states = r.layers * r.directions;
  OPGRAPH_CHECK(count == static_cast<size_t>(states * r.per_direction), "params: expected ", states * r.per_direction,
                " tensors (", r.layers, " layers x ", r.directions, " directions x ", r.per_direction, ": w_ih, w_hh",
                r.has_biases ? ", b_ih, b_hh" : "", r.projections ? ", w_hr" : "", "), got ", count);
  for (int64_t layer = 0; layer < r.layers; ++layer) {
    for (int64_t d = 0; d < r.directions; ++d) {
      const Shape shapes[] = {{r.gate_rows(), r.layer_input(layer)},
                              {r.gate_rows(), r.output},
                              {r.gate_rows()},
                              {r.gate_rows()},
                              {r.output, r.hidden}};
      for (int k = 0; k < 5; ++k) {
        if ((k == 2 || k == 3) && !r.has_biases) continue;
        if (k == 4 && !r.projections) continue;
        const size_t i = r.param(layer, d, k);
        const TensorMeta expected{in[0]->dtype, shapes[k]};
        OPGRAPH_CHECK(*in[i] == expected, "params[", i - r.params, "] (", kParamNames[k], " of layer ", layer,
                      d == 1 ? ", reverse direction" : "", "): expected ", expected.str(), ", got ", in[i]->str());
      }
    }
  }
}

// lstm.input and gru.input share their functions over schemas that differ in
// hx (a Tensor[] or a Tensor), which describe() reads from the flat inputs; so
// they keep the raw kernel form, and read their attributes at the indexes
// found in the schema when the op is defined.
struct RnnPositions {
  size_t has_biases, num_layers, dropout, train, bidirectional, batch_first;
  explicit RnnPositions(const Schema& schema)
      : has_biases(attribute_index(schema, "has_biases").value()),
        num_layers(attribute_index(schema, "num_layers").value()),
        dropout(attribute_index(schema, "dropout").value()),
        train(attribute_index(schema, "train").value()),
        bidirectional(attribute_index(schema, "bidirectional").value()),
        batch_first(attribute_index(schema, "batch_first").value()) {}
};

// One call's attributes.
struct RnnAttrs {
  bool has_biases;
  int64_t num_layers;
  double dropout;
  bool train, bidirectional, batch_first;
  std::span<const size_t> list_sizes;

  RnnAttrs(const RnnPositions& at, const Attrs& attrs)
      : has_biases(std::get<bool>(attrs[at.has_biases])),
        num_layers(std::get<int64_t>(attrs[at.num_layers])),
        dropout(std::get<double>(attrs[at.dropout])),
        train(std::get<bool>(attrs[at.train])),
        bidirectional(std::get<bool>(attrs[at.bidirectional])),
        batch_first(std::get<bool>(attrs[at.batch_first])),
        list_sizes(attrs.list_sizes()) {}
};

// Checks an RNN call's inputs and attributes and returns its description.
Rnn describe(Cell cell, std::span<const TensorMeta* const> in, const RnnAttrs& attrs) {
  Rnn r;
  r.cell = cell;
  r.gates = cell == Cell::Lstm ? 4 : 3;
  const size_t hx_count = cell == Cell::Lstm ? attrs.list_sizes[0] : 1;
  OPGRAPH_CHECK(cell == Cell::Gru || hx_count == 2, "hx: expected 2 tensors (h_0 and c_0), got ", hx_count);
  r.params = 1 + hx_count;
  const TensorMeta& x = *in[0];
  check_floating(x, "input");
  r.batch_first = attrs.batch_first;
  OPGRAPH_CHECK(x.dim() == 3, "input: expected rank 3 (",
                r.batch_first ? "[batch, seq, features]" : "[seq, batch, features]", "; nn.",
                cell == Cell::Lstm ? "LSTM" : "GRU", " adds the batch dim of an unbatched input), got ", x.str());
  r.steps = x.shape[r.batch_first ? 1 : 0];
  r.batch = x.shape[r.batch_first ? 0 : 1];
  r.input_size = x.shape[2];
  OPGRAPH_CHECK(r.steps >= 1, "input: expected a sequence of at least 1 step (dim ", r.batch_first ? 1 : 0, "), got ",
                x.str());
  r.layers = attrs.num_layers;
  OPGRAPH_CHECK(r.layers >= 1, "num_layers: expected at least 1, got ", r.layers);
  r.directions = attrs.bidirectional ? 2 : 1;
  r.has_biases = attrs.has_biases;
  // Dropout only acts between layers, and only in training.
  const double dropout = attrs.dropout;
  OPGRAPH_CHECK(!attrs.train || dropout == 0.0 || r.layers == 1,
                "dropout: expected 0.0 with train=True (opgraph runs inference: no dropout between layers), got ",
                dropout);
  check_states(r, in);
  r.per_direction = (r.has_biases ? 4 : 2) + (r.projections ? 1 : 0);
  check_params(r, in, attrs.list_sizes[cell == Cell::Lstm ? 1 : 0]);
  return r;
}

Rnn describe(Cell cell, std::span<const Tensor> in, const RnnAttrs& attrs) {
  std::vector<const TensorMeta*> metas;
  for (const Tensor& t : in) metas.push_back(&t.meta());
  return describe(cell, metas, attrs);
}

template <Cell C>
std::vector<TensorMeta> rnn_shape(std::span<const TensorMeta* const> in, const RnnAttrs& attrs) {
  const Rnn r = describe(C, in, attrs);
  const DType dtype = in[0]->dtype;
  const int64_t states = r.layers * r.directions, width = r.directions * r.output;
  std::vector<TensorMeta> out{{dtype, r.batch_first ? Shape{r.batch, r.steps, width} : Shape{r.steps, r.batch, width}},
                              {dtype, {states, r.batch, r.output}}};
  if (C == Cell::Lstm) out.push_back({dtype, {states, r.batch, r.hidden}});
  return out;
}

// --- Fast kernel.

template <typename T>
T sigmoid(T x) {
  return T(1) / (T(1) + fast_exp(-x));
}

// One timestep's gate math for one batch row and `units` hidden units:
// `x` holds their gate pre-activations from the input's projection (gates
// x_gate apart), `g` from the recurrent product (gates g_gate apart). The
// pointers are restrict: the gates' eight streams otherwise take more
// run-time alias checks than GCC makes, and the loop stays scalar.
// LSTM: c = f * c + i * g, h = o * tanh(c), c in place.
template <typename T>
void lstm_row(const T* __restrict x, int64_t x_gate, const T* __restrict g, int64_t g_gate, T* __restrict c,
              T* __restrict h, int64_t units) {
  const T *xi = x, *xf = xi + x_gate, *xg = xf + x_gate, *xo = xg + x_gate;
  const T *gi = g, *gf = gi + g_gate, *gg = gf + g_gate, *go = gg + g_gate;
  for (int64_t j = 0; j < units; ++j) {
    const T c_new = sigmoid(xf[j] + gf[j]) * c[j] + sigmoid(xi[j] + gi[j]) * fast_tanh(xg[j] + gg[j]);
    c[j] = c_new;
    h[j] = sigmoid(xo[j] + go[j]) * fast_tanh(c_new);
  }
}

// GRU: n = tanh(x_n + r * (W_hn h + b_hn)), h = (1 - z) * n + z * h_prev, where
// g's n part holds W_hn h + b_hn.
template <typename T>
void gru_row(const T* __restrict x, int64_t x_gate, const T* __restrict g, int64_t g_gate, const T* __restrict h_prev,
             T* __restrict h, int64_t units) {
  const T *xr = x, *xz = xr + x_gate, *xn = xz + x_gate;
  const T *gr = g, *gz = gr + g_gate, *gn = gz + g_gate;
  for (int64_t j = 0; j < units; ++j) {
    const T z = sigmoid(xz[j] + gz[j]);
    const T n = fast_tanh(xn[j] + sigmoid(xr[j] + gr[j]) * gn[j]);
    h[j] = (T(1) - z) * n + z * h_prev[j];
  }
}

// A matrix operand of `rows` x `cols` with rows `row_stride` apart.
Operand matrix(const void* data, int64_t rows, int64_t cols, int64_t row_stride) {
  return {const_cast<void*>(data), {rows, cols}, {row_stride, 1}};
}

// w^T for a weight w of shape [n, k], as a [k, n] operand.
Operand transposed(const Tensor& w) {
  const int64_t n = w.size(0), k = w.size(1);
  return {w.data(), {k, n}, {1, k}};
}

// A bias of n values, broadcast over the rows.
std::optional<Operand> row_bias(const void* data, int64_t n) {
  if (data == nullptr) return std::nullopt;
  return Operand{const_cast<void*>(data), {1, n}, {n, 1}};
}

// How the hidden units of one direction are split among the threads that
// share its timesteps: slice s takes units [s * H / S, (s + 1) * H / S).
// W_hh^T's columns are grouped by slice, gate after gate within each, so
// that a slice's product reads its own block of W_hh^T, which then stays in
// its thread's cache from step to step, and writes its gates contiguously.
struct Slices {
  int64_t count = 1, units = 0, gates = 1;

  int64_t first(int64_t s) const { return s * units / count; }
  int64_t size(int64_t s) const { return first(s + 1) - first(s); }
  // The column of W_hh^T that row q of W_hh (gate q / units, unit q % units) takes.
  std::vector<int64_t> columns() const {
    std::vector<int64_t> column(static_cast<size_t>(gates * units));
    for (int64_t s = 0; s < count; ++s) {
      for (int64_t gate = 0; gate < gates; ++gate) {
        for (int64_t u = first(s); u < first(s + 1); ++u) {
          column[gate * units + u] = gates * first(s) + gate * size(s) + u - first(s);
        }
      }
    }
    return column;
  }
};

// to[column[q]] = from[q] for each row q of a [n, k] matrix, transposed.
template <typename T>
void transpose_columns(const T* from, int64_t n, int64_t k, const std::vector<int64_t>& column, T* to) {
  for (int64_t q = 0; q < n; ++q) {
    for (int64_t i = 0; i < k; ++i) to[i * n + column[q]] = from[q * k + i];
  }
}

// w^T for a weight w of shape [n, k] as a contiguous [k, n] matrix, its
// columns in the slices' order, for the products of one timestep. At batch
// 1 they are one row times w^T, which product.h's kernels run along w^T's
// rows, summing whole vectors of gates; along w's own rows they take a dot
// product per gate, whose horizontal sums cost more than the multiplies at
// k = 256 (LSTM-256's steps took twice as long). A Session's weight is
// transposed once and kept in the node's prepared weights; any other into `scratch`.
template <typename T>
const T* transposed_weight(const KernelContext& context, size_t input, const Tensor& w, const Slices& slices,
                           Tensor& scratch) {
  const int64_t n = w.size(0), k = w.size(1);
  const auto make = [&] {
    Tensor copy = Tensor::empty({k, n}, w.dtype());
    transpose_columns(w.data_ptr<const T>(), n, k, slices.columns(), copy.data_ptr<T>());
    return copy;
  };
  if (!is_constant_input(context, input)) {
    scratch = make();
    return scratch.data_ptr<const T>();
  }
  // Negative sizes set the key apart from the products' (a layout's words, then the weight's address).
  const PreparedWeights::Key key{-n, -k, -slices.count, reinterpret_cast<intptr_t>(w.data())};
  const std::shared_ptr<const void> kept = prepared_weights(context)->derived(key, spanned_bytes(w), [&] {
    auto copy = std::make_shared<Tensor>(make());
    return std::shared_ptr<const void>(copy, copy->data());
  });
  return static_cast<const T*>(kept.get());
}

// Multiply-adds of one timestep's product below which its threads would
// wait on each other longer than they save: the steps of a direction run on
// one thread.
constexpr int64_t kSlicedStepWork = int64_t(1) << 16;

// One direction of one layer: what its timesteps share.
template <typename T>
struct Direction {
  const Rnn* r = nullptr;
  int64_t d = 0;
  KernelContext context;  // what one slice's products run on
  const T* gx = nullptr;  // the input's projection, [rows, gates * H] in the rows' order
  T* out = nullptr;       // the layer's output, [rows, D * P]
  const T* h0 = nullptr;  // this direction's [B, P] slice of h_0
  T* c = nullptr;         // its [B, H] slice of c_n (LSTM), which starts as c_0's
  Slices slices;
  std::vector<Product> products;  // per slice: h_{t-1} @ its columns of W_hh^T + b_hh
  Product projection;             // with proj_size: h = (o * tanh(c)) @ W_hr^T
  Tensor gh, projected, w_hh_scratch, w_hr_scratch, bias;

  int64_t width() const { return r->directions * r->output; }
  int64_t h_step() const { return r->batch_step() * width(); }
  int64_t time(int64_t s) const { return d == 0 ? s : r->steps - 1 - s; }
  T* h_at(int64_t s) const { return out + r->row(time(s), 0) * width() + d * r->output; }

  // Step s for slice k's units: its gates' product, then its units of h (and c).
  void step(int64_t s, int64_t k) {
    const int64_t B = r->batch, H = r->hidden, G = r->gate_rows();
    const T* h_prev = s == 0 ? h0 : h_at(s - 1);
    const int64_t prev_step = s == 0 ? r->output : h_step();
    Product& p = products[k];
    p.a.data = const_cast<T*>(h_prev);
    p.a.strides[0] = prev_step;
    p.w_backward = s % 2 == 1;
    run_product(context, p, dtype_of<T>, false);
    const int64_t u0 = slices.first(k), n = slices.size(k), x_step = r->batch_step() * G;
    const T* x = gx + r->row(time(s), 0) * G + u0;
    const T* g = gh.data_ptr<const T>() + r->gates * u0;
    T* h = r->projections ? projected.data_ptr<T>() : h_at(s) + u0;
    const int64_t to_step = r->projections ? H : h_step();
    dispatch_cpu([&] {
      for (int64_t b = 0; b < B; ++b) {
        if (r->cell == Cell::Gru) {
          gru_row(x + b * x_step, H, g + b * G, n, h_prev + b * prev_step + u0, h + b * to_step, n);
        } else {
          lstm_row(x + b * x_step, H, g + b * G, n, c + b * H + u0, h + b * to_step, n);
        }
      }
    });
    if (r->projections) {
      projection.dst = matrix(h_at(s), B, r->output, h_step());
      run_product(context, projection, dtype_of<T>, false);
    }
  }
};

template <typename T>
Direction<T> make_direction(const KernelContext& context, const Rnn& r, std::span<const Tensor> in,
                            std::span<const Tensor> outs, int64_t layer, int64_t d, T* out, const T* gx, bool alone) {
  const int64_t B = r.batch, H = r.hidden, P = r.output, G = r.gate_rows();
  const int64_t state = layer * r.directions + d;
  Direction<T> dir;
  dir.r = &r;
  dir.d = d;
  dir.gx = gx;
  dir.out = out;
  dir.h0 = in[r.h0].data_ptr<const T>() + state * B * P;
  if (r.cell == Cell::Lstm) {
    dir.c = outs[2].data_ptr<T>() + state * B * H;
    std::memcpy(dir.c, in[r.c0].data_ptr<const T>() + state * B * H, sizeof(T) * B * H);
  }
  // Slices for the pool's threads where a step's product is worth sharing;
  // a projection needs all of h between the two products, and takes one.
  const bool shared = !alone && !r.projections && B * P * G >= kSlicedStepWork;
  dir.slices = {shared ? std::min<int64_t>(context.pool->num_threads(), H) : 1, H, r.gates};
  dir.context = alone || dir.slices.count > 1 ? on_calling_thread(context) : context;
  dir.gh = Tensor::empty({B, G}, dtype_of<T>);
  T* gh = static_cast<T*>(dir.gh.data());
  const size_t w_hh = r.param(layer, d, 1), b_hh = r.param(layer, d, 3);
  const T* w = transposed_weight<T>(context, w_hh, in[w_hh], dir.slices, dir.w_hh_scratch);
  if (r.has_biases) {  // b_hh in the slices' order
    dir.bias = Tensor::empty({G}, dtype_of<T>);
    const std::vector<int64_t> column = dir.slices.columns();
    T* bias = static_cast<T*>(dir.bias.data());
    for (int64_t q = 0; q < G; ++q) bias[column[q]] = in[b_hh].data_ptr<const T>()[q];
  }
  for (int64_t k = 0; k < dir.slices.count; ++k) {
    const int64_t first = r.gates * dir.slices.first(k), cols = r.gates * dir.slices.size(k);
    Product p{matrix(dir.h0, B, P, P), matrix(w + first, P, cols, G), matrix(gh + first, B, cols, G),
              row_bias(r.has_biases ? static_cast<const T*>(dir.bias.data()) + first : nullptr, cols)};
    p.constant_w = is_constant_input(context, w_hh);
    dir.products.push_back(std::move(p));
  }
  if (r.projections) {
    const size_t w_hr = r.param(layer, d, 4);
    dir.projected = Tensor::empty({B, H}, dtype_of<T>);
    dir.projection = {matrix(dir.projected.data(), B, H, H),
                      matrix(transposed_weight<T>(context, w_hr, in[w_hr], {1, P, 1}, dir.w_hr_scratch), H, P, P),
                      matrix(nullptr, B, P, 0), std::nullopt};
    dir.projection.constant_w = is_constant_input(context, w_hr);
  }
  return dir;
}

// A direction's timesteps shared by the threads that take part: each step's
// slices are claimed by whichever thread gets to them first, each thread
// trying its own slice first, so that it keeps that block of W_hh^T in its
// cache; a thread moves on to step t + 1 once every slice of step
// t is done. A thread that arrives late joins the current step, and one
// alone takes every slice: no thread ever waits for one that has not begun.
class StepClaims {
 public:
  StepClaims(int64_t slices, int64_t steps) : claimed_(static_cast<size_t>(slices)), slices_(slices), steps_(steps) {
    for (auto& step : claimed_) step.store(-1, std::memory_order_relaxed);
  }

  template <typename Step>
  void take_part(int64_t preferred, const Step& step) {
    for (;;) {
      const int64_t t = done_.load(std::memory_order_acquire) / slices_;
      if (t >= steps_) return;
      for (int64_t i = 0; i < slices_; ++i) {
        const int64_t k = (preferred + i) % slices_;
        int64_t previous = t - 1;
        if (!claimed_[k].compare_exchange_strong(previous, t, std::memory_order_acq_rel)) continue;
        try {
          step(t, k);
        } catch (...) {
          done_.store(steps_ * slices_, std::memory_order_release);  // the others stop
          throw;
        }
        done_.fetch_add(1, std::memory_order_acq_rel);
      }
      // Spins through the few microseconds a step takes, then lets the core go.
      for (int spins = 0; done_.load(std::memory_order_acquire) < (t + 1) * slices_;) {
        if (spins < kSpins) {
          ++spins;
        } else {
          std::this_thread::yield();
        }
      }
    }
  }

 private:
  std::vector<std::atomic<int64_t>> claimed_;  // per slice, the last step it was claimed for
  std::atomic<int64_t> done_{0};               // slices finished, over all steps
  int64_t slices_, steps_;
  static constexpr int kSpins = 4096;
};

template <typename T>
void run_direction(Direction<T>& dir, const KernelContext& context, std::span<const Tensor> outs, int64_t layer) {
  const Rnn& r = *dir.r;
  if (dir.slices.count == 1) {
    for (int64_t s = 0; s < r.steps; ++s) dir.step(s, 0);
  } else {
    StepClaims claims(dir.slices.count, r.steps);
    context.pool->parallel_for(0, dir.slices.count, 1, [&](int64_t begin, int64_t) {
      claims.take_part(begin, [&](int64_t s, int64_t k) { dir.step(s, k); });
    });
  }
  const int64_t B = r.batch, P = r.output;
  const T* last = dir.h_at(r.steps - 1);
  T* h_n = outs[1].data_ptr<T>() + (layer * r.directions + dir.d) * B * P;
  for (int64_t b = 0; b < B; ++b) std::memcpy(h_n + b * P, last + b * dir.h_step(), sizeof(T) * P);
}

template <typename T>
void run_rnn(const KernelContext& context, const Rnn& r, std::span<const Tensor> in, std::span<const Tensor> outs) {
  const DType dtype = in[0].dtype();
  const int64_t G = r.gate_rows(), width = r.directions * r.output;
  std::vector<Tensor> gx(static_cast<size_t>(r.directions));
  for (Tensor& g : gx) g = Tensor::empty({r.rows(), G}, dtype);
  Tensor between[2];  // the sequences between layers, alternately
  const T* seq = in[0].data_ptr<const T>();
  int64_t seq_width = r.input_size;
  // The two directions of a layer at once, each alone on its thread, where
  // there are two; else one after the other, each on the whole pool.
  const bool apart = r.directions == 2 && context.pool->num_threads() >= 2;
  for (int64_t layer = 0; layer < r.layers; ++layer) {
    T* out = outs[0].data_ptr<T>();
    if (layer + 1 < r.layers) {
      Tensor& next = between[layer % 2];
      if (!next.defined()) next = Tensor::empty({r.rows(), width}, dtype);
      out = next.data_ptr<T>();
    }
    // Every timestep's input projection, one product per direction, each
    // split over the pool.
    for (int64_t d = 0; d < r.directions; ++d) {
      const size_t w_ih = r.param(layer, d, 0), b_ih = r.param(layer, d, 2);
      Product p{matrix(seq, r.rows(), seq_width, seq_width), transposed(in[w_ih]), matrix(gx[d].data(), r.rows(), G, G),
                row_bias(r.has_biases ? in[b_ih].data() : nullptr, G)};
      p.constant_w = is_constant_matrix(context, w_ih, in[w_ih]);
      run_product(context, p, dtype, false);
    }
    std::vector<Direction<T>> directions;
    for (int64_t d = 0; d < r.directions; ++d) {
      directions.push_back(make_direction<T>(context, r, in, outs, layer, d, out, gx[d].data_ptr<const T>(), apart));
    }
    if (apart) {
      context.pool->parallel_for(0, 2, 1, [&](int64_t begin, int64_t end) {
        for (int64_t d = begin; d < end; ++d) run_direction(directions[d], context, outs, layer);
      });
    } else {
      for (Direction<T>& dir : directions) run_direction(dir, context, outs, layer);
    }
    seq = out;
    seq_width = width;
  }
}

template <Cell C>
void rnn_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
             const RnnAttrs& attrs) {
  const Rnn r = describe(C, in, attrs);
  dispatch_floating(in[0].dtype(), "input", [&](auto zero) { run_rnn<decltype(zero)>(context, r, in, out); });
}

// --- Reference: the equations, in double, one timestep, batch row and unit at a time.

// y[q] = bias[q] + sum_k w[q, k] x[k] for a row-major w of rows x cols.
template <typename T>
std::vector<double> affine(const T* w, const T* bias, const std::vector<double>& x, int64_t rows) {
  const int64_t cols = static_cast<int64_t>(x.size());
  std::vector<double> y(static_cast<size_t>(rows));
  for (int64_t q = 0; q < rows; ++q) {
    double sum = bias ? double(bias[q]) : 0.0;
    for (int64_t k = 0; k < cols; ++k) sum += double(w[q * cols + k]) * x[k];
    y[q] = sum;
  }
  return y;
}

double sigmoid_reference(double x) { return 1.0 / (1.0 + std::exp(-x)); }

template <typename T>
void rnn_reference_typed(const Rnn& r, std::span<const Tensor> in, std::span<const Tensor> outs) {
  const int64_t B = r.batch, H = r.hidden, P = r.output, steps = r.steps;
  const auto param = [&](int64_t layer, int64_t d, int k) -> const T* {
    if ((k == 2 || k == 3) && !r.has_biases) return nullptr;
    return in[r.param(layer, d, k)].data_ptr<const T>();
  };
  // seq[t][b]: the current layer's input vectors.
  std::vector<std::vector<std::vector<double>>> seq(steps, std::vector<std::vector<double>>(B));
  const T* x = in[0].data_ptr<const T>();
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      seq[t][b].assign(x + r.row(t, b) * r.input_size, x + (r.row(t, b) + 1) * r.input_size);
    }
  }
  const T* h0 = in[r.h0].data_ptr<const T>();
  for (int64_t layer = 0; layer < r.layers; ++layer) {
    std::vector<std::vector<std::vector<double>>> next(
        steps, std::vector<std::vector<double>>(B, std::vector<double>(r.directions * P)));
    for (int64_t d = 0; d < r.directions; ++d) {
      const int64_t state = layer * r.directions + d;
      for (int64_t b = 0; b < B; ++b) {
        std::vector<double> h(h0 + (state * B + b) * P, h0 + (state * B + b + 1) * P), c(H);
        if (r.cell == Cell::Lstm) {
          const T* c0 = in[r.c0].data_ptr<const T>() + (state * B + b) * H;
          c.assign(c0, c0 + H);
        }
        for (int64_t s = 0; s < steps; ++s) {
          const int64_t t = d == 0 ? s : steps - 1 - s;
          const std::vector<double> gx = affine(param(layer, d, 0), param(layer, d, 2), seq[t][b], r.gate_rows());
          const std::vector<double> gh = affine(param(layer, d, 1), param(layer, d, 3), h, r.gate_rows());
          if (r.cell == Cell::Lstm) {
            std::vector<double> full(H);
            for (int64_t j = 0; j < H; ++j) {
              const double i = sigmoid_reference(gx[j] + gh[j]);
              const double f = sigmoid_reference(gx[H + j] + gh[H + j]);
              const double g = std::tanh(gx[2 * H + j] + gh[2 * H + j]);
              const double o = sigmoid_reference(gx[3 * H + j] + gh[3 * H + j]);
              c[j] = f * c[j] + i * g;
              full[j] = o * std::tanh(c[j]);
            }
            h = r.projections ? affine<T>(param(layer, d, 4), nullptr, full, P) : full;
          } else {
            for (int64_t j = 0; j < H; ++j) {
              const double rg = sigmoid_reference(gx[j] + gh[j]);
              const double z = sigmoid_reference(gx[H + j] + gh[H + j]);
              const double n = std::tanh(gx[2 * H + j] + rg * gh[2 * H + j]);
              h[j] = (1 - z) * n + z * h[j];
            }
          }
          std::copy(h.begin(), h.end(), next[t][b].begin() + d * P);
        }
        T* h_n = outs[1].data_ptr<T>() + (state * B + b) * P;
        for (int64_t j = 0; j < P; ++j) h_n[j] = static_cast<T>(h[j]);
        if (r.cell == Cell::Lstm) {
          T* c_n = outs[2].data_ptr<T>() + (state * B + b) * H;
          for (int64_t j = 0; j < H; ++j) c_n[j] = static_cast<T>(c[j]);
        }
      }
    }
    seq = std::move(next);
  }
  T* y = outs[0].data_ptr<T>();
  const int64_t width = r.directions * P;
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < width; ++j) y[r.row(t, b) * width + j] = static_cast<T>(seq[t][b][j]);
    }
  }
}

template <Cell C>
void rnn_reference(const KernelContext&, std::span<const Tensor> in, std::span<const Tensor> out,
                   const RnnAttrs& attrs) {
  const Rnn r = describe(C, in, attrs);
  dispatch_floating(in[0].dtype(), "input", [&](auto zero) { rnn_reference_typed<decltype(zero)>(r, in, out); });
}

template <Cell C>
void define_rnn(BuiltinOps& builtins, const char* schema,
                std::source_location where = std::source_location::current()) {
  using Kernel = void (*)(const KernelContext&, std::span<const Tensor>, std::span<const Tensor>, const RnnAttrs&);
  const RnnPositions at(Schema::parse(schema));
  auto kernel = [at](Kernel fn) -> KernelFn {
    return [fn, at](const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                    const Attrs& attrs) { fn(context, in, out, RnnAttrs(at, attrs)); };
  };
  define(builtins,
         {.schema = schema,
          .shape = [at](std::span<const TensorMeta* const> in,
                        const Attrs& attrs) { return rnn_shape<C>(in, RnnAttrs(at, attrs)); },
          .cpu = kernel(rnn_cpu<C>),
          .reference = kernel(rnn_reference<C>),
          .prepare = prepare_weights},
         where);
}

}  // namespace

void register_recurrent_ops(BuiltinOps& builtins) {
  define_rnn<Cell::Lstm>(
      builtins,
      "aten::lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, "
      "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)");
  define_rnn<Cell::Gru>(builtins,
                        "aten::gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, "
                        "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)");
}

}  // namespace opgraph::kernels
