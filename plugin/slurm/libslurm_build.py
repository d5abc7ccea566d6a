"""Build `plugin.slurm._libslurm`: a small cffi (API mode) binding of libslurm's job update.

Run at install time by deploy/setup.sh (``python -m plugin.slurm.libslurm_build``); it needs
a C compiler, cffi and Slurm's headers (Debian: ``libslurm-dev``, which must match the
installed slurmctld's major.minor: 22.05 on the testbed). Only the functions and struct
members the daemon uses are declared; ``...;`` lets the compiler fill in the real layout
from ``<slurm/slurm.h>``, so the binding is built for exactly the Slurm it is compiled
against. When the build fails the daemon uses the ``scontrol`` writer (plugin/slurm/
factory.py); nothing else depends on it.

What the binding covers (plugin/slurm/libslurm_backend.py uses it):

* ``slurm_init``: reads slurm.conf (``SLURM_CONF``) once per process;
* ``slurm_init_job_desc_msg`` + ``slurm_update_job``: one REQUEST_UPDATE_JOB with any of
  NumNodes (min/max), TimeLimit, Partition, AdminComment and priority INFINITE (what
  ``scontrol release`` sends) set at once;
* ``slurm_load_job`` (+ ``slurm_free_job_info_msg``): one job's record
  (REQUEST_JOB_INFO_SINGLE, as ``scontrol show job ID``), for its admin comment as a field
  rather than as text to parse;
* ``slurm_load_jobs`` (+ ``slurm_free_job_info_msg``): every job's record
  (REQUEST_JOB_INFO, what ``squeue`` sends), given the last answer's update time so that an
  unchanged queue is answered SLURM_NO_CHANGE_IN_DATA; the members squeue prints for the
  daemon's pending read (plugin/slurm/libslurm_jobs.py), and ``slurm_job_reason_string``
  (libslurmfull's, as squeue prints the Reason); the kill guard's view of the jobs it
  watches (start and end times, ``slurm_job_state_string``) from the same call;
* ``slurm_get_errno`` / ``slurm_strerror``: Slurm's own words for a refusal.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from cffi import FFI

__all__ = ["CDEF", "MODULE", "build", "ffibuilder"]

#: The extension module's dotted name (plugin/slurm/_libslurm*.so once built).
MODULE = "plugin.slurm._libslurm"

CDEF = """
typedef int... time_t;
#define NO_VAL ...
#define INFINITE ...
#define SLURM_VERSION_NUMBER ...

typedef struct {
    uint32_t job_id;
    char *job_id_str;
    uint32_t min_nodes;
    uint32_t max_nodes;
    uint32_t time_limit;
    uint32_t priority;
    char *admin_comment;
    char *partition;
    ...;
} job_desc_msg_t;

typedef struct {
    char *account;
    char *admin_comment;
    char *command;
    char *comment;
    uint32_t job_id;
    uint32_t job_state;
    uint32_t max_nodes;
    char *name;
    char *nodes;
    uint16_t ntasks_per_node;
    uint32_t num_nodes;
    uint32_t num_tasks;
    char *partition;
    uint32_t priority;
    char *qos;
    char *state_desc;
    uint16_t state_reason;
    time_t submit_time;
    time_t start_time;
    time_t end_time;
    uint32_t time_limit;
    uint32_t user_id;
    char *wckey;
    char *work_dir;
    ...;
} slurm_job_info_t;

typedef struct {
    time_t last_update;
    uint32_t record_count;
    slurm_job_info_t *job_array;
    ...;
} job_info_msg_t;

#define SHOW_ALL ...
#define SHOW_LOCAL ...
#define JOB_STATE_BASE ...
#define SLURM_NO_CHANGE_IN_DATA ...

void slurm_init(const char *conf);
int slurm_load_job(job_info_msg_t **resp, uint32_t job_id, uint16_t show_flags);
int slurm_load_jobs(time_t update_time, job_info_msg_t **job_info_msg_pptr, uint16_t show_flags);
char *slurm_job_reason_string(int inx);
char *slurm_job_state_string(uint32_t inx);
void slurm_free_job_info_msg(job_info_msg_t *job_buffer_ptr);
void slurm_init_job_desc_msg(job_desc_msg_t *job_desc_msg);
int slurm_update_job(job_desc_msg_t *job_msg);
int slurm_get_errno(void);
char *slurm_strerror(int errnum);
"""

#: Where Debian keeps libslurmfull, the library Slurm's own commands and plugins link to.
#: The plugins libslurm loads to pack an update (select/cons_tres, ...) need symbols only
#: libslurmfull exports: linked against the public libslurm.so.38 instead, the first
#: update kills the process ("undefined symbol: slurm_gres_find_id", seen on the testbed).
SLURM_LIBDIRS = ("/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib64/slurm", "/usr/lib/slurm")


def _libraries() -> tuple[list[str], list[str]]:
    """libslurmfull and its directory where installed, else the public libslurm."""
    for folder in SLURM_LIBDIRS:
        if (Path(folder) / "libslurmfull.so").exists():
            return ["slurmfull"], [folder]
    return ["slurm"], []


ffibuilder = FFI()
ffibuilder.cdef(CDEF)
_LIBS, _DIRS = _libraries()
ffibuilder.set_source(
    MODULE,
    # squeue prints a pending job's Reason with this libslurmfull function, which no public
    # header declares (src/common/slurm_protocol_defs.h); the enum it takes is an int.
    "#include <slurm/slurm.h>\nextern char *slurm_job_reason_string(int inx);\n"
    "extern char *slurm_job_state_string(uint32_t inx);",
    libraries=_LIBS,
    library_dirs=_DIRS,
    runtime_library_dirs=_DIRS,
)


def build(root: Path | None = None) -> Path:
    """Compile the extension in a scratch directory and put the shared object (only) into
    `root`'s plugin/slurm/ (the project's by default); its path.

    The object is renamed into place, never overwritten: a running daemon keeps the one it
    loaded (writing into a mapped shared object crashes the process that maps it)."""
    target = (root or Path(__file__).resolve().parents[2]) / "plugin" / "slurm"
    with tempfile.TemporaryDirectory(prefix="adaptalloc-libslurm-") as scratch:
        built = Path(ffibuilder.compile(tmpdir=scratch, verbose=False))
        target.mkdir(parents=True, exist_ok=True)
        staged = target / f".{built.name}.new"
        shutil.copy2(built, staged)
        return staged.replace(target / built.name)


if __name__ == "__main__":  # deploy/setup.sh
    try:
        print(build())
    except Exception as exc:  # setup.sh prints one line and the scontrol writer is used
        print(f"libslurm binding not built: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
        sys.exit(1)
