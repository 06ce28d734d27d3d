"""
opgraph's C++ core: tensors, the op registry, op packages, op calls, graphs, sessions and the tokenizer.
"""

from collections.abc import Sequence
import os

import numpy


class Error(RuntimeError):
    pass

class Tensor:
    """
    An n-dimensional array over owned or borrowed memory. Exchanges data with NumPy, PyTorch and any DLPack producer without copying.
    """

    @property
    def shape(self) -> tuple: ...

    @property
    def strides(self) -> tuple:
        """Strides in elements, as DLPack and PyTorch count them."""

    @property
    def dtype(self) -> str: ...

    @property
    def device(self) -> str: ...

    @property
    def ndim(self) -> int: ...

    @property
    def nbytes(self) -> int: ...

    def numel(self) -> int: ...

    def data_ptr(self) -> int: ...

    def is_contiguous(self) -> bool: ...

    def contiguous(self) -> Tensor: ...

    def to(self, device: str) -> Tensor:
        """
        This tensor on `device` ('cpu', 'cuda', 'cuda:N'): itself when already there, else a copy.
        """

    def numpy(self) -> object:
        """A NumPy array sharing this tensor's memory."""

    def __array__(self, dtype: object | None = None, copy: object | None = None) -> object: ...

    def __dlpack__(self, *args, **kwargs) -> object: ...

    def __dlpack_device__(self) -> object: ...

    def __repr__(self) -> str: ...

def dtype_names() -> list[str]:
    """
    opgraph's dtype names, in the order of their numbers in the package C ABI.
    """

def from_dlpack(array: object) -> Tensor:
    """
    Wraps any DLPack producer (or capsule) as an opgraph.Tensor, sharing its memory; the producer stays alive while the tensor does.
    """

def empty(shape: Sequence[int], dtype: str = 'float32', device: str = 'cpu') -> Tensor:
    """
    A new uninitialized tensor: 64-byte aligned on the CPU, from the stream-ordered pool on a GPU.
    """

class Argument:
    """One argument or return of an op schema."""

    @property
    def name(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def is_tensor(self) -> bool: ...

    @property
    def optional(self) -> bool: ...

    @property
    def kwarg_only(self) -> bool: ...

    @property
    def alias(self) -> str: ...

    @property
    def has_default(self) -> bool: ...

    @property
    def default(self) -> object: ...

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

class Schema:
    """An op schema in PyTorch's syntax."""

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def overload(self) -> str: ...

    @property
    def arguments(self) -> list[Argument]: ...

    @property
    def returns(self) -> list[Argument]: ...

    @property
    def qualified_name(self) -> str: ...

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

    def __eq__(self, arg: Schema, /) -> bool: ...

def parse_schema(text: str) -> Schema:
    """Parses a schema such as 'ns::op(Tensor x, *, int k=1) -> Tensor'."""

class LoadedLibrary:
    """An op package that has been loaded."""

    @property
    def path(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def ops(self) -> list[str]: ...

    def __repr__(self) -> str: ...

def load_library(path: object) -> LoadedLibrary:
    """
    Loads an op package (a shared library) and registers its ops. Loading the same file again is harmless.
    """

def loaded_libraries() -> list[LoadedLibrary]: ...

def load_packages(packages: Sequence[str], search_paths: Sequence[str] = []) -> None:
    """
    Loads the op packages a graph names (paths, or names found as lib<name>.so in search_paths or among the loaded packages); the error names the package and every place looked in.
    """

def list_ops() -> list[str]:
    """Qualified names of every registered op, sorted."""

def op_schema(name: str) -> Schema:
    """The schema of a registered op; str() of it is the schema text."""

def op_samples(name: str) -> list:
    """
    The op's declared samples (opgraph/registry/sample.h), each a dict: inputs (flat, NumPy arrays with the sample's layout, or None), list_sizes, attrs, tolerances (float32, float64), error ('' for a good sample), text. Values are drawn from a fixed seed per sample, as the native checks draw them.
    """

def check_samples(name: str) -> list:
    """
    The native checks of the op's samples (opgraph/registry/conformance.h): a list of (check, sample index, failure ('' if it passed), skipped).
    """

def op_backward(name: str) -> str:
    """
    Qualified name of the op computing this op's gradients, or '' if it has none.
    """

def op_devices(name: str) -> list[str]:
    """The device types ('cpu', 'cuda') a registered op has kernels for."""

def set_num_threads(num_threads: int) -> None:
    """Sets the number of threads kernels use (the calling thread included)."""

def get_num_threads() -> int: ...

def manual_seed(seed: int) -> None:
    """
    Restarts the stream of the random ops (rand, randn, randperm, native_dropout) from a seed, as torch.manual_seed does: the same calls then give the same values, whatever the thread count.
    """

def get_cpu_capability() -> str:
    """
    The vector instructions the built-in kernels use: "avx512", "avx2" or "default" (baseline x86-64). The environment variable OPGRAPH_CPU_CAPABILITY, read once, lowers it.
    """

def cpu_has_bf16() -> bool:
    """
    Whether this CPU multiplies bfloat16 in hardware (AVX-512 BF16 or AMX), which Session(..., precision='bf16') needs. False below the "avx512" capability.
    """

def cpu_has_vnni() -> bool:
    """
    Whether this CPU sums products of bytes into 32-bit lanes in one instruction (AVX512-VNNI), on which Session(..., activations='int8') multiplies a few rows' int8 activations; elsewhere AVX2's byte multiply-adds take two. False below the "avx512" capability.
    """

def call(name: str, /, *inputs: object, out: object = None, **attrs: object) -> object:
    """
    Runs a registered op. Tensor inputs are positional (any DLPack or buffer producer, zero-copy; None for an omitted `Tensor?`; a list or tuple of them for a `Tensor[]`), attributes are keywords. Returns new arrays (one, or a tuple): NumPy arrays on the CPU; on a GPU, arrays of the inputs' framework (torch, CuPy). Or fills `out` (an array or a sequence of arrays) and returns it. Device kernels run on opgraph.cuda's current stream, the legacy default stream unless set.
    """

def call_reference(name: str, /, *inputs: object, out: object = None, **attrs: object) -> object:
    """
    Like call(), but runs the op's plain reference implementation: the oracle its fast kernels are tested against.
    """

class ValueInfo:
    """
    The name, dtype and shape of a graph value (an input, constant or output).
    """

    def __init__(self, name: str, dtype: object, shape: Sequence[int | str]) -> None:
        """
        dtype: a name ('float32'), NumPy or PyTorch dtype; shape: sizes, and names for symbolic dimensions.
        """

    @property
    def name(self) -> str: ...

    @property
    def dtype(self) -> str: ...

    @property
    def shape(self) -> tuple:
        """A tuple of sizes, with symbolic dimensions as their names (str)."""

    def __eq__(self, arg: ValueInfo, /) -> bool: ...

    def __copy__(self) -> ValueInfo: ...

    def __deepcopy__(self, memo: object) -> ValueInfo: ...

    def __getstate__(self) -> tuple: ...

    def __setstate__(self, arg: tuple, /) -> None: ...

    def __repr__(self) -> str: ...

class NodeInput:
    """
    What a node passes for one tensor argument: a value, a list of values (Tensor[]; an empty name is a None element of a Tensor?[]) or nothing (an omitted Tensor?).
    """

    @staticmethod
    def value(name: str) -> NodeInput: ...

    @staticmethod
    def list(names: Sequence[str]) -> NodeInput: ...

    @staticmethod
    def none() -> NodeInput: ...

    @property
    def values(self) -> list[str]: ...

    @property
    def is_list(self) -> bool: ...

    @property
    def is_none(self) -> bool: ...

    def __eq__(self, arg: NodeInput, /) -> bool: ...

    def __repr__(self) -> str: ...

class Node:
    """One op call of a graph: its tensor inputs, outputs and attributes."""

    @property
    def name(self) -> str: ...

    @property
    def op_type(self) -> str: ...

    @property
    def inputs(self) -> list[NodeInput]:
        """One NodeInput per tensor argument of the op's schema, in order."""

    @property
    def outputs(self) -> list[str]: ...

    @property
    def attrs(self) -> dict[str, object]:
        """
        Attributes by name; a size computed from symbolic dimensions is its expression (str).
        """

    @property
    def source(self) -> str: ...

    def __eq__(self, arg: Node, /) -> bool: ...

    def __repr__(self) -> str: ...

class StateInfo:
    """A value that persists from run to run: see Graph.add_state."""

    @property
    def value(self) -> ValueInfo:
        """Its name, dtype and shape."""

    @property
    def initial(self) -> str:
        """The constant it starts from; '' for zeros."""

    @property
    def update(self) -> str:
        """The value it holds after a run; '' for none."""

    def __repr__(self) -> str: ...

class Graph:
    """
    A graph of op calls over named values, with inputs, constants and outputs: built with add_input, add_constant, add_node and add_output, or read from JSON (the form opgraph's C++ API and CLI read and write).
    """

    def __init__(self, name: str = '') -> None: ...

    @staticmethod
    def from_json(json: str) -> Graph: ...

    def to_json(self, indent: int | None = None) -> str: ...

    @property
    def name(self) -> str: ...

    @name.setter
    def name(self, arg: str, /) -> None: ...

    @property
    def inputs(self) -> list[ValueInfo]: ...

    @property
    def outputs(self) -> list[str]: ...

    @property
    def constants(self) -> list[ValueInfo]: ...

    @property
    def nodes(self) -> list[Node]: ...

    @property
    def packages(self) -> list[str]:
        """The op packages the nodes need (names or paths); Session loads them."""

    @packages.setter
    def packages(self, arg: Sequence[str], /) -> None: ...

    @property
    def node_names(self) -> list[str]: ...

    def add_input(self, name: str, dtype: object, shape: Sequence[int | str]) -> ValueInfo:
        """
        Appends an input fed at each run; shape holds sizes and names of symbolic dimensions.
        """

    def add_constant(self, name: str, dtype: object, shape: Sequence[int]) -> ValueInfo:
        """
        Declares a constant (a weight); its data goes beside the graph, to Session or save_opg.
        """

    def add_node(self, op: str, inputs: Sequence[str | None | Sequence[str | None] | NodeInput], outputs: Sequence[str] | None = None, *, name: str | None = None, source: str = '', attributes: Mapping[str, object] | None = None, **attrs) -> list[str]:
        """
        Appends a call of op (qualified name) and returns its output names. inputs: one entry per tensor argument of the schema (a value name, None for an omitted Tensor?, a list for a Tensor[]); attrs: the other arguments by name (an int or int[] may hold size expressions of the inputs' symbolic dimensions, '2*N'), bound to the schema as op calls bind them; op, inputs, outputs, name, source and attributes are this method's own: `attributes`, a mapping, passes the others too, and any name (pow.Scalar's self). outputs and name default to names made from the op's, one output per return of the schema (a Tensor[] return's items need their names given). An op the registry does not know yet is kept as given, outputs named, for verify() and Session to check once its package is loaded.
        """

    def add_output(self, name: str) -> None:
        """Makes the value `name` an output of the graph."""

    @property
    def states(self) -> list[StateInfo]: ...

    def add_state(self, name: str, dtype: object, shape: Sequence[int | str], *, initial: str = '', update: str = '') -> StateInfo:
        """
        Declares a state: a value nodes read by `name` that persists between runs, in the state objects of Session.new_state(). It starts as constant `initial` (or zeros) and holds value `update` after each run (or never changes).
        """

    def verify(self) -> None:
        """
        Checks the graph against the registry (load its packages first); raises opgraph.Error naming the node, op and argument at fault.
        """

    def infer_shapes(self) -> dict[str, ValueInfo]:
        """
        The ValueInfo of every value, by name; symbolic dimensions stay symbolic.
        """

    def __copy__(self) -> Graph: ...

    def __eq__(self, arg: Graph, /) -> bool: ...

    def __repr__(self) -> str: ...

def save_opg(path: str | os.PathLike, graph: Graph | str, weights: dict[str, object] | None = None) -> None:
    """
    Writes an .opg file (a safetensors file): the graph (an opgraph.Graph or its JSON) and one array per constant.
    """

def quantize(model: str | os.PathLike, output: str | os.PathLike, *, weights: str, group_size: int | None = None, exclude: Sequence[str] = (), embeddings: bool = False) -> dict[str, list[tuple]]:
    """
    Writes `model` (an .opg file) to `output` with each linear layer's constant float32 weight stored as 'int8' or 'int4' levels and a float32 scale per output and group of `group_size` inputs (default: all of them for int8, 32 for int4), as opgraph.quantized_linear nodes; 'int8_asym' and 'int4_asym' add an int8 zero point per scale. Layers whose node or weight name matches a glob of `exclude` stay as they are; with `embeddings`, each embedding table is quantized too (opgraph.quantized_embedding). Returns {'quantized': [(node, weight, inputs, outputs)], 'kept': [(node, why)]}. The op packages the graph names must be loaded.
    """

def load_opg(path: str | os.PathLike) -> tuple[Graph, dict[str, numpy.ndarray]]:
    """
    Reads an .opg file: (graph, weights). The weights are NumPy arrays over the mapped file (writing to one changes this process's copy only).
    """

class State:
    """
    The buffers of a graph's states (a KV cache, a recurrent carry) for one sequence or stream, made by Session.new_state() and passed to its runs: run(..., state=s). Copies share the buffers.
    """

    def reset(self) -> None:
        """
        Every state back to its initial value (its initial constant, or zeros).
        """

    def __getitem__(self, name: str) -> object:
        """A copy of state `name` as it is now, as a NumPy array."""

    @property
    def values(self) -> list[ValueInfo]:
        """The states as declared, their dimensions sized."""

class PassInfo:
    """A graph pass a Session makes at load (opgraph.graph_passes())."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str:
        """What it rewrites into what."""

    @property
    def devices(self) -> list[str]:
        """The device types a Session makes it for ('cpu', 'cuda')."""

class PassReport:
    """What one graph pass did to a Session's graph at load."""

    @property
    def name(self) -> str:
        """The pass's name."""

    @property
    def rewritten(self) -> list[str]:
        """The nodes it made or changed, as 'name: op'."""

    @property
    def removed(self) -> int:
        """How many nodes it dropped."""

    @property
    def skipped(self) -> bool:
        """Disabled, or not for the session's device."""

    @property
    def changed(self) -> bool: ...

def graph_passes() -> list[PassInfo]:
    """
    The graph passes a Session makes at load (Session(optimize=True)), in the order it makes them.
    """

class Session:
    """
    A graph loaded to run: packages loaded, ops and kernels resolved, shapes inferred and memory planned once. run() may be called from several threads at once.
    """

    def __init__(self, source: str | os.PathLike | Graph, *, weights: dict[str, object] | None = None, threads: int | None = None, package_paths: Sequence[str | os.PathLike] = (), profile: bool = False, optimize: bool = True, disabled_passes: Sequence[str] = (), device: str = 'cpu', precision: str = 'f32', quantize: str | None = None, group_size: int | None = None, activations: str | None = None, products: str = 'auto') -> None:
        """
        Loads an .opg file, or a Graph with `weights` (one array per constant; copied). `threads` counts the kernels' threads (None: the global pool); `package_paths` lists folders to find the graph's op packages in (an entry that is a package library, a CMake project or a folder of sources is loaded first, see opgraph.load_package); `profile` records each node's time in each run; `optimize` rewrites the graph at load to run faster, outputs the same up to float rounding: the passes of opgraph.graph_passes() for the device, but those named in `disabled_passes` (pass_reports says what each did). `device` ('cpu', 'cuda', 'cuda:N') is where the graph runs: on a GPU every op needs a CUDA kernel, the weights are copied there, host inputs are copied in, and outputs come back to the host when the inputs came from it, else stay on the device in the inputs' framework (torch, CuPy). `precision` 'bf16' has the products with a weight (linear layers, matrix products, convolutions) multiply in bfloat16, summing in float32, as OpenVINO's bf16 inference precision does: about twice as fast, on a CPU with AVX-512 BF16 or AMX (else an error); inputs, outputs and the other ops stay float32. `quantize` 'int8' or 'int4' keeps the float32 weights of the matrix products (linear layers, the LM head) as int8 (symmetric) or int4 (as llama.cpp's Q4_0), with a float32 scale per `group_size` inputs (a multiple of 32 that divides each product's input dimension; None: per output channel for int8, 32 for int4): a quarter or an eighth of the bytes for a decoding step to stream; needs AVX2 or AVX-512. 'int8_asym' and 'int4_asym' add an int8 zero point per scale, each group's levels spanning its smallest weight to its largest (OpenVINO NNCF's INT8_ASYM and INT4_ASYM). `activations` 'int8' (with quantize, or on a file whose layers opgraph.quantize stored) also quantizes the products' other operand at run time and multiplies on the CPU's integer instructions: a few rows (a decoding step), and any rows by int4 or grouped weights, per row and block of 32 values to int8, as llama.cpp's Q8_0, on AVX512-VNNI or AVX2 (where the input dimension is a multiple of 32; else they stay float32); 16 rows or more (a prompt, an encoder's tokens) by int8 weights of a scale per output channel, per row to uint8 with a zero point, on oneDNN's int8 matmul (AMX-INT8 or AVX512-VNNI; without VNNI, per block of 32 as a few rows). With it, the dense 2-D convolutions of a CNN (not the first, which reads the input as given, nor those of a chain holding a grouped convolution) quantize their input per tensor (uint8 after a ReLU, int8 otherwise) and their weight per output channel to int8, on oneDNN's int8 convolutions (AVX2 or AVX-512). `products` picks the engine of the float32 products with a constant weight: 'auto' by shape and CPU (the panels for a few rows; for 128 rows or more, whichever engine ran the shape fastest on this CPU model, measured on its first product and kept in ~/.cache/opgraph/engines, or $OPGRAPH_CACHE_DIR/engines), or 'onednn', 'mkl' or 'panels' (opgraph's own) for every one that engine can take; node_engines says which each node got.
        """

    def run(self, *inputs: object, state: State | None = None) -> list[numpy.ndarray] | dict[str, numpy.ndarray]:
        """
        Runs the graph on its inputs, given as arrays in graph order (run(x, y)), one list or tuple of them (run([x, y])), or one dict of input name -> array (run({'x': x, 'y': y})). Returns a list of NumPy arrays in graph output order, or for a dict a dict of output name -> array. A wrong count, an unknown or missing name, or an array of the wrong dtype or shape is an opgraph.Error naming the graph's inputs. A graph with state runs with `state`, from new_state(), which the run reads and updates.
        """

    @property
    def states(self) -> list[StateInfo]:
        """The graph's states as declared (StateInfo); empty for most graphs."""

    def new_state(self, **sizes: int) -> State:
        """
        A new set of the graph's state buffers at their initial values; `sizes` gives the symbolic dimensions of the states' shapes (new_state(B=1)). Each sequence or stream running at once needs its own.
        """

    @property
    def inputs(self) -> list[ValueInfo]:
        """The graph inputs: ValueInfo, symbolic dimensions as str."""

    @property
    def outputs(self) -> list[ValueInfo]:
        """The graph outputs, with their inferred dtypes and shapes."""

    @property
    def graph(self) -> Graph: ...

    @property
    def node_engines(self) -> list[str]:
        """
        By node of graph: the engines its products ran on so far, and why ('' for a node without products, or before its first run).
        """

    @property
    def pass_reports(self) -> list[PassReport]:
        """
        What each graph pass did at load, in order (empty with optimize=False).
        """

    @property
    def planned_peak_bytes(self) -> int:
        """Bytes of the arena the memory plan of the latest run's shapes needs."""

    @property
    def naive_bytes(self) -> int:
        """
        Bytes the intermediate tensors of the latest run's shapes take with no reuse.
        """

    def write_chrome_trace(self, path: object) -> None:
        """
        Writes the profile (Session(..., profile=True)) as Chrome trace-event JSON.
        """

def infer_output_metas(name: str, input_metas: list, /, **attrs: object) -> list[tuple[str, tuple[int, ...]]]:
    """
    Runs an op's shape function on metas alone. `input_metas` has one entry per tensor argument: a (dtype name, shape) pair, None for an omitted `Tensor?`, or a list of pairs for a `Tensor[]`. Returns a (dtype name, shape) pair per output; raises opgraph.Error naming the op for inputs it rejects.
    """

def cuda_is_available() -> bool:
    """
    Whether CUDA kernels can run here: the backend is built and loads, and the driver reports a device.
    """

def cuda_unavailable_reason() -> str:
    """Why CUDA is not available (empty when it is)."""

def cuda_device_count() -> int: ...

def cuda_synchronize(device: int = 0) -> None:
    """Waits for the work opgraph queued on the device's current stream."""

def cuda_current_stream(device: int = 0) -> int:
    """
    The calling thread's stream for the device, as an integer cudaStream_t (0: legacy default).
    """

def cuda_set_stream(device: int, stream: int) -> None:
    """
    Sets the calling thread's stream for the device (an integer cudaStream_t, as torch's Stream.cuda_stream and CuPy's Stream.ptr give).
    """

class Tokenizer:
    """
    A byte-level BPE tokenizer read from a Hugging Face tokenizer.json (GPT-2, Llama-3, Qwen2, SmolLM), encoding and decoding as Hugging Face's tokenizers does. What the file asks for that is not implemented is an opgraph.Error naming the file and the setting.
    """

    @staticmethod
    def from_file(path: str | os.PathLike) -> Tokenizer:
        """
        Reads a tokenizer.json, and the bos_token and eos_token of the tokenizer_config.json beside it where there is one.
        """

    @staticmethod
    def from_json(tokenizer_json: str, config_json: str = '') -> Tokenizer:
        """
        The same from the text of a tokenizer.json and, optionally, of a tokenizer_config.json.
        """

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """
        The token ids of `text`, with the post-processor's special tokens (a BOS, say) if `add_special_tokens`.
        """

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """
        The text of `ids`; bytes that are not UTF-8 become U+FFFD. An id no token has is an opgraph.Error.
        """

    def token_bytes(self, id: int) -> bytes:
        """The bytes a token stands for: possibly a part of a UTF-8 character."""

    def token_to_id(self, token: str) -> int | None:
        """The id of a token as the vocabulary spells it, or None."""

    def id_to_token(self, id: int) -> str:
        """
        The token of an id as the vocabulary spells it (in the byte-level alphabet).
        """

    def is_special(self, id: int) -> bool:
        """
        Whether the id is a special added token, which decode(skip_special_tokens=True) leaves out.
        """

    @property
    def vocab_size(self) -> int:
        """One past the largest id."""

    @property
    def bos_id(self) -> int | None:
        """The bos_token of tokenizer_config.json, or None."""

    @property
    def eos_id(self) -> int | None:
        """The eos_token of tokenizer_config.json, or None."""

class TokenStreamDecoder:
    """
    Decodes ids one at a time as a model makes them: push() returns the text that became complete, holding back the bytes of a UTF-8 character that later tokens may complete. The pushes' texts and finish() together are Tokenizer.decode of all the ids.
    """

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool = False) -> None: ...

    def push(self, id: int) -> str:
        """The text this id completes (often empty)."""

    def finish(self) -> str:
        """
        What is held back, each incomplete character as U+FFFD; the decoder then starts afresh.
        """
