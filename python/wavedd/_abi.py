"""_abi.py - the one description of libwaveclient's C API that wavedd uses.

Both foreign-function backends are built from these tables: _via_cffi.py
turns them into cffi's cdef text, _via_ctypes.py into ctypes Structures and
argtypes.  The rest of the package names the tables' types
(C.new("wave_error")) but declares none.  Each entry is
written as the header writes it (include/wave/types.h, error.h,
client.h), one field or one prototype a string, so a change of the
header is copied here line for line.  tests/test_abi.py compiles a probe
against the header that checks every struct's size, every field's type,
offset and size, every enum value and every prototype (as a function
pointer of this type, with -Werror), so the tables cannot drift from the
header unseen.

Types the parsers know (decl() below): void, char, int, unsigned,
uint8_t, uint32_t, uint64_t, size_t, double, the enums and structs of these
tables, the opaque handles, pointers of any depth ("const" is kept for
cffi and the probe, ignored by ctypes), and one array dimension
("char message[256]").  A struct may hold, by value, only structs listed
before it.

SONAME is the library whose ABI these tables describe; update it with
them.  The loader (_lib.py) also accepts the other soname(s) in SONAMES,
with a warning, so that a tree whose soname moved still loads.
"""
import re

SONAME = "libwaveclient.so.4"
SONAMES = (SONAME,)

# typedef enum NAME { CONSTANT = value, ... } NAME;
ENUMS = (
    ("wave_dtype", (("WAVE_DTYPE_NONE", 0), ("WAVE_U32", 1), ("WAVE_S32", 2),
                    ("WAVE_F32", 3), ("WAVE_U64", 4), ("WAVE_S64", 5),
                    ("WAVE_F64", 6))),
    ("wave_op", (("WAVE_OP_NONE", 0), ("WAVE_SUM", 1), ("WAVE_MIN", 2),
                 ("WAVE_MAX", 3), ("WAVE_EXTENT", 4), ("WAVE_AND", 5),
                 ("WAVE_OR", 6), ("WAVE_XOR", 7), ("WAVE_ARGMIN", 8),
                 ("WAVE_ARGMAX", 9), ("WAVE_FSUM", 10))),
    ("wave_priority", (("WAVE_PRIORITY_NORMAL", 0), ("WAVE_PRIORITY_HIGH", 1),
                       ("WAVE_PRIORITY_LOW", 2))),
    ("wave_job_state", (("WAVE_JOB_QUEUED", 1), ("WAVE_JOB_RUNNING", 2),
                        ("WAVE_JOB_DONE", 3), ("WAVE_JOB_FAILED", 4),
                        ("WAVE_JOB_CANCELLED", 5),
                        ("WAVE_JOB_PREPARING", 6))),
)

# typedef struct NAME NAME;  (used only through pointers)
OPAQUE = ("wave_client", "wave_region")

# typedef struct NAME { field; ... } NAME;  in header order
STRUCTS = (
    ("wave_error", (
        "int code",
        "char message[256]")),
    ("wave_client_options", (
        "int dial",
        "const char *token",
        "const char *token_file",
        "const char *tls_ca_file",
        "const char *tls_server_name",
        "int timeout_ms")),
    ("wave_chunk", (
        "const void *data",
        "size_t bytes")),
    ("wave_reduce_request", (
        "wave_dtype dtype",
        "wave_op op",
        "const wave_chunk *input",
        "size_t n_input",
        "const wave_chunk *mask",
        "size_t n_mask",
        "int has_mask",
        "const char *device",
        "wave_priority priority",
        "unsigned deadline_ms")),
    ("wave_reduce_result", (
        "wave_dtype dtype",
        "wave_op op",
        "unsigned n_values",
        "uint64_t bits[2]",
        "int64_t index",
        "uint64_t count",
        "uint64_t rows",
        "double seconds",
        "const char *device",
        "int finite",
        "uint32_t exact_flags",
        "uint32_t exact_bytes",
        "uint8_t exact[272]")),
    ("wave_extent", (
        "const wave_region *region",
        "size_t offset",
        "size_t bytes")),
    ("wave_region_reduce", (
        "wave_dtype dtype",
        "wave_op op",
        "const wave_extent *input",
        "size_t n_input",
        "const wave_extent *mask",
        "size_t n_mask",
        "int has_mask",
        "const char *device",
        "wave_priority priority",
        "unsigned deadline_ms")),
    ("wave_pack_check", (
        "const char *pack",
        "int ok",
        "const char *state",
        "const char *detail",
        "double hash_rate")),
    ("wave_device_status", (
        "const char *name",
        "const char *backend",
        "const char *description",
        "unsigned queue_depth",
        "unsigned queue_capacity",
        "uint64_t jobs_done",
        "uint64_t jobs_failed",
        "int faulted",
        "int running",
        "const char *fault",
        "unsigned wave_width",
        "const char *exchange",
        "const char *exchange_reason",
        "size_t n_packs",
        "wave_pack_check *packs",
        "uint64_t jobs_cancelled",
        "uint64_t busy_ms",
        "const char *health_source",
        "const char *health_note",
        "unsigned health_have",
        "double temperature_c",
        "double power_w",
        "double power_limit_w",
        "unsigned sm_clock_mhz",
        "unsigned mem_clock_mhz",
        "uint64_t throttle_reasons",
        "const char *throttle",
        "uint64_t memory_used",
        "uint64_t memory_total",
        "double utilization_pct",
        "const char *guard",
        "const char *guard_reason",
        "uint64_t guard_throttles",
        "unsigned max_temperature_c",
        "unsigned resume_temperature_c",
        "unsigned max_power_w",
        "uint64_t watchdog_restarts")),
    ("wave_share", (
        "const char *principal",
        "uint64_t region_bytes",
        "uint64_t region_limit",
        "uint64_t stream_bytes",
        "uint64_t stream_limit",
        "unsigned fd_conns",
        "unsigned fd_limit",
        "uint64_t file_fds",
        "uint64_t file_fd_limit")),
    ("wave_status", (
        "const char *version",
        "uint64_t uptime_ms",
        "uint64_t jobs_served",
        "uint64_t jobs_failed",
        "uint64_t instance",
        "int ready",
        "size_t n_devices",
        "wave_device_status *devices",
        "size_t n_listen",
        "char **listen",
        "uint64_t max_files",
        "uint64_t jobs_cancelled",
        "size_t n_shares",
        "wave_share *shares",
        "unsigned devices_throttled",
        "unsigned fd_conns",
        "unsigned fd_limit",
        "uint64_t *listen_connections",
        "uint64_t *device_hashes",
        "double *device_hash_rate")),
    ("wave_hash_request", (
        "const char *pack",
        "uint64_t nonce",
        "uint64_t count",
        "uint64_t target",
        "uint32_t max_winners",
        "int want_outputs",
        "const char *device",
        "const char *const *devices",
        "size_t n_devices",
        "unsigned segment_log2",
        "int want_segments",
        "int detach",
        "wave_priority priority",
        "unsigned deadline_ms")),
    ("wave_winner", (
        "uint64_t nonce",
        "uint64_t output")),
    ("wave_device_share", (
        "const char *device",
        "uint64_t hashes",
        "double seconds",
        "int faulted")),
    ("wave_hash_result", (
        "uint64_t job_fingerprint",
        "unsigned segment_log2",
        "uint64_t segment_count",
        "size_t n_segments",
        "uint64_t *segments",
        "size_t n_shares",
        "wave_device_share *shares",
        "size_t n_winners",
        "wave_winner *winners",
        "uint64_t winner_count",
        "uint64_t best_nonce",
        "uint64_t best_output",
        "uint64_t hashes",
        "double seconds",
        "const char *device",
        "const char *exchange",
        "size_t n_outputs",
        "uint64_t *outputs")),
    ("wave_job_info", (
        "uint64_t job_id",
        "wave_job_state state",
        "uint64_t done",
        "uint64_t total",
        "double seconds",
        "const char *device",
        "wave_error error",
        "uint64_t instance",
        "size_t n_devices",
        "const char *waiting_pack",
        "const char *waiting_device",
        "unsigned prepare_steps",
        "unsigned prepare_steps_total",
        "const char *owner",
        "char held[512]")),
)

# the calls wavedd makes, as prototypes (parameter names optional)
FUNCTIONS = (
    "wave_dtype wave_dtype_parse(const char *s)",
    "const char *wave_dtype_name(wave_dtype d)",
    "wave_op wave_op_parse(const char *s)",
    "const char *wave_op_name(wave_op op)",
    "int wave_op_check(wave_dtype d, wave_op op)",
    "unsigned wave_op_values(wave_op op)",
    "const char *wave_strerror(int err)",
    "const char *wave_errname(int err)",
    "int wave_client_open_with(wave_client **out, const char *url, "
    "const wave_client_options *opts, wave_error *err)",
    "void wave_client_close(wave_client *c)",
    "void wave_client_set_timeout(wave_client *c, int timeout_ms)",
    "const char *wave_client_url(const wave_client *c)",
    "int wave_reduce(wave_client *c, const wave_reduce_request *req, "
    "wave_reduce_result *res, wave_error *err)",
    "int wave_region_create(wave_region **out, size_t bytes, "
    "const char *name, wave_error *err)",
    "void wave_region_close(wave_region *r)",
    "void *wave_region_data(wave_region *r)",
    "size_t wave_region_size(const wave_region *r)",
    "int wave_region_register(wave_client *c, wave_region *r, "
    "wave_error *err)",
    "int wave_region_unregister(wave_client *c, wave_region *r, "
    "wave_error *err)",
    "uint64_t wave_region_id(const wave_region *r)",
    "int wave_region_file_fd(wave_client *c, int fd, size_t bytes, "
    "const char *name, wave_region **out, wave_error *err)",
    "int wave_reduce_region(wave_client *c, const wave_region_reduce *req, "
    "wave_reduce_result *res, wave_error *err)",
    "int wave_reduce_ring(wave_client *c, const wave_reduce_request *req, "
    "wave_region *ring, wave_reduce_result *res, wave_error *err)",
    "int wave_status_get(wave_client *c, wave_status **out, "
    "wave_error *err)",
    "void wave_status_free(wave_status *s)",
    "int wave_hash_submit(wave_client *c, const wave_hash_request *req, "
    "uint64_t *job_id, wave_error *err)",
    "int wave_job_poll(wave_client *c, uint64_t job_id, unsigned wait_ms, "
    "wave_job_info *info, wave_hash_result *res, wave_error *err)",
    "int wave_job_cancel(wave_client *c, uint64_t job_id, "
    "wave_job_info *info, wave_error *err)",
    "void wave_hash_result_free(wave_hash_result *res)",
    "int wave_jobs_get(wave_client *c, wave_job_info **jobs, "
    "size_t *n_jobs, wave_error *err)",
    "void wave_jobs_free(wave_job_info *jobs)",
)

# ---- parsing the entries -------------------------------------------------

_TOKEN = re.compile(r"\*|\w+")
_DECL = re.compile(r"^(?P<type>.*?)\b(?P<name>[A-Za-z_]\w*)\s*"
                   r"(?:\[\s*(?P<dim>\d+)\s*\])?\s*$")
_PROTO = re.compile(r"^(?P<head>[^(]*)\((?P<args>[^)]*)\)\s*$")


def _type_text(t):
    """A C type spelled one way: "const char *", "char **",
    "const char *const *"."""
    out, prev = "", None
    for tok in _TOKEN.findall(t):
        if tok == "*":
            out += "*" if prev == "*" else " *"
        else:
            out += tok if prev in (None, "*") else " " + tok
        prev = tok
    return out


class Decl:
    """One field, parameter or function: .type (the C type, spelled as
    _type_text does), .name, .dim (None, or the array length); .base (the
    type without const and stars) and .depth (how many stars)."""

    def __init__(self, ctype, name, dim):
        self.type = ctype
        self.name = name
        self.dim = dim
        words = [w for w in _TOKEN.findall(ctype) if w != "const"]
        self.depth = words.count("*")
        self.base = " ".join(w for w in words if w != "*")

    def c(self, name=None):
        """As C writes it: "char message[256]", "const char *token"; name
        overrides .name ("" for none: the type of a cast)."""
        n = self.name if name is None else name
        sep = "" if self.type.endswith("*") or not n else " "
        dim = f"[{self.dim}]" if self.dim is not None else ""
        return f"{self.type}{sep}{n}{dim}"


def decl(text):
    """A field or parameter "const char *token" (a name is required) as a
    Decl."""
    m = _DECL.match(text.strip())
    if not m or not _TOKEN.findall(m.group("type")):
        raise ValueError(f"_abi: cannot read the declaration {text!r}")
    dim = m.group("dim")
    return Decl(_type_text(m.group("type")), m.group("name"),
                int(dim) if dim else None)


def prototype(text):
    """A prototype (every parameter named) as (the function's Decl: its
    return type and name, [parameter Decls])."""
    m = _PROTO.match(text.strip())
    if not m:
        raise ValueError(f"_abi: cannot read the prototype {text!r}")
    args = m.group("args").strip()
    params = ([decl(a) for a in args.split(",")]
              if args and args != "void" else [])
    return decl(m.group("head")), params


def struct_fields():
    """[(struct name, [Decl, ...]), ...] in table order."""
    return [(name, [decl(f) for f in fields]) for name, fields in STRUCTS]


def functions():
    """[(function Decl, [parameter Decls]), ...] in table order."""
    return [prototype(p) for p in FUNCTIONS]
