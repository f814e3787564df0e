/* The resident jail's request path in compiled code (resident.py says what the zygote is).

   A zygote is a fork of the resident's Python process, cloned into a command's new pid and mount
   namespaces, that holds CAP_SYS_ADMIN in the jail's user namespace until it drops it. `serve`
   reads one request, walks it with the C API into plain C data before its first change to the
   process, then does what resident.py's `init` does, step for step and with the same error texts
   and statuses, without the interpreter: descriptors, masks, the write sandbox's mount steps, cwd,
   capabilities, the Landlock layer, vfork + exec, the announce, the init's reaping and the status.

   A request it does not model exactly (another scratch or write layer than prepared, a shape or
   type it does not expect, a string with a NUL, an unknown mount step) is handed back untouched,
   as (message, descriptors), for resident.py's Python path: that path stays the reference.

   Everything read is bounded: the message by MAX_REQUEST, its descriptors by MAX_FDS, each path
   by PATH_MAX, each error text by its buffer; every failure after the request is parsed ends in
   status 126 (the command never runs) or, for a failed exec, 127 — as the Python path. */

#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>
#include <marshal.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_REQUEST (4 << 20) /* as resident.py's */
#define MAX_FDS 8
#define MAX_TARGET 1024 /* a descriptor number a request may ask for */
#define MAX_ITEMS 65536 /* argv, env, masks, mount steps: each list at most */
#define WHY_SIZE (4096 + 256)

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#define SYS_LANDLOCK_ADD_RULE 445
#define SYS_LANDLOCK_RESTRICT_SELF 446

/* ---- the request as plain C data ------------------------------------------------------------ */

enum { OP_PIN, OP_RO, OP_MASK, OP_SHOW, OP_READONLY, OP_DEVPTS };

struct where { int given; int valid; unsigned long long dev, ino; };

struct step {
    int kind;
    const char *path;
    const char *source;  /* OP_SHOW */
    struct where where;  /* OP_MASK */
};

struct request {
    char *const *argv;
    char *const *envp;
    const char *argv0;    /* as given, for the exec error */
    const char **exec_list; /* where exec looks: argv[0], or each PATH directory joined to it */
    Py_ssize_t n_exec;
    const char *cwd;
    int targets[MAX_FDS];
    int n_targets;
    struct step *masks; Py_ssize_t n_masks;
    struct step *mounts; Py_ssize_t n_mounts;
    int same;               /* the scratch and layer asked for are those prepared */
    const char **tmpfs; Py_ssize_t n_tmpfs;         /* asked for */
    const char **prep_tmpfs; Py_ssize_t n_prep_tmpfs; /* prepared */
    int abi;
    int extra_ns, missing_ns;
    int steps;              /* timestamps asked for (the step bench) */
};

static PyObject *kept; /* every object whose buffer a pointer above refers to */

static const char *as_path(PyObject *o) {
    /* a str as os.fsencode encodes it (UTF-8, surrogateescape), no NUL */
    if (!PyUnicode_Check(o)) return NULL;
    Py_ssize_t size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(o, &size); /* an ASCII str's own buffer: no copy */
    if (utf8 != NULL) return (Py_ssize_t)strlen(utf8) == size ? utf8 : NULL;
    PyErr_Clear(); /* a lone surrogate: what surrogateescape makes of it */
    PyObject *b = PyUnicode_EncodeFSDefault(o);
    if (b == NULL) { PyErr_Clear(); return NULL; }
    if (PyList_Append(kept, b) < 0) { Py_DECREF(b); PyErr_Clear(); return NULL; }
    Py_DECREF(b);
    const char *s = PyBytes_AS_STRING(b);
    Py_ssize_t n = PyBytes_GET_SIZE(b);
    if ((Py_ssize_t)strlen(s) != n) return NULL;
    return s;
}

static const char *as_bounded_path(PyObject *o) {
    const char *s = as_path(o);
    if (s != NULL && strlen(s) >= PATH_MAX) return NULL;
    return s;
}

static const char *joined(const char *a, const char *sep, const char *b) {
    PyObject *r = PyBytes_FromFormat("%s%s%s", a, sep, b);
    if (r == NULL) { PyErr_Clear(); return NULL; }
    if (PyList_Append(kept, r) < 0) { Py_DECREF(r); PyErr_Clear(); return NULL; }
    Py_DECREF(r);
    return PyBytes_AS_STRING(r);
}

static PyObject *item(PyObject *dict, const char *key) { /* borrowed, or NULL */
    PyObject *v = PyDict_GetItemString(dict, key);
    return v;
}

static int as_list(PyObject *o, Py_ssize_t max) {
    return o != NULL && PyList_Check(o) && PyList_GET_SIZE(o) <= max;
}

static int where_of(PyObject *o, struct where *w) {
    /* resident.mask's `where`: None or a list; [] means none; [dev, ino] the directory's
       identity; anything else given never matches (the command is refused, as in Python) */
    w->given = w->valid = 0;
    if (o == Py_None) return 0;
    if (!PyList_Check(o) && !PyTuple_Check(o)) return -1;
    if (PySequence_Fast_GET_SIZE(o) == 0) return 0;
    w->given = 1;
    if (PySequence_Fast_GET_SIZE(o) != 2) return 0;
    PyObject *d = PySequence_Fast_GET_ITEM(o, 0), *i = PySequence_Fast_GET_ITEM(o, 1);
    if (!PyLong_Check(d) || !PyLong_Check(i)) return -1;
    w->dev = PyLong_AsUnsignedLongLong(d);
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    w->ino = PyLong_AsUnsignedLongLong(i);
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    w->valid = 1;
    return 0;
}

static int truthy(PyObject *dict, const char *key) {
    PyObject *v = dict ? item(dict, key) : NULL;
    if (v == NULL) return 0;
    int t = PyObject_IsTrue(v);
    if (t < 0) { PyErr_Clear(); return 0; }
    return t;
}

static int namespace_flags(PyObject *spec) {
    return (truthy(spec, "ipc") ? CLONE_NEWIPC : 0) | (truthy(spec, "net") ? CLONE_NEWNET : 0);
}

static int path_list(PyObject *o, const char ***out, Py_ssize_t *n) {
    if (!as_list(o, MAX_ITEMS)) return -1;
    *n = PyList_GET_SIZE(o);
    *out = PyMem_Calloc(*n + 1, sizeof(char *));
    if (*out == NULL) return -1;
    for (Py_ssize_t i = 0; i < *n; i++)
        if (((*out)[i] = as_bounded_path(PyList_GET_ITEM(o, i))) == NULL) return -1;
    return 0;
}

static int mount_step(PyObject *op, struct step *s) {
    /* resident.apply_mount's step: [kind, ..., path] */
    if (!PyList_Check(op) || PyList_GET_SIZE(op) < 2) return -1;
    Py_ssize_t n = PyList_GET_SIZE(op);
    PyObject *kind = PyList_GET_ITEM(op, 0);
    if (!PyUnicode_Check(kind)) return -1;
    if ((s->path = as_bounded_path(PyList_GET_ITEM(op, n - 1))) == NULL) return -1;
    s->where.given = s->where.valid = 0;
    if (PyUnicode_CompareWithASCIIString(kind, "pin") == 0 && n == 2) s->kind = OP_PIN;
    else if (PyUnicode_CompareWithASCIIString(kind, "ro") == 0 && n == 2) s->kind = OP_RO;
    else if (PyUnicode_CompareWithASCIIString(kind, "readonly") == 0 && n == 2) s->kind = OP_READONLY;
    else if (PyUnicode_CompareWithASCIIString(kind, "devpts") == 0 && n == 2) s->kind = OP_DEVPTS;
    else if (PyUnicode_CompareWithASCIIString(kind, "show") == 0 && n == 3) {
        s->kind = OP_SHOW;
        if ((s->source = as_bounded_path(PyList_GET_ITEM(op, 1))) == NULL) return -1;
    } else if (PyUnicode_CompareWithASCIIString(kind, "mask") == 0) {
        s->kind = OP_MASK;
        PyObject *where = PyList_GetSlice(op, 1, n - 1);
        if (where == NULL) { PyErr_Clear(); return -1; }
        int r = where_of(where, &s->where);
        Py_DECREF(where);
        return r;
    } else return -1;
    return 0;
}

static int parse(PyObject *req, int n_fds, PyObject *prepare, struct request *r) {
    /* 0: `r` holds the request; -1: one this path does not take (the Python path does) */
    if (!PyDict_Check(req)) return -1;
    memset(r, 0, sizeof *r);
    PyObject *fds = item(req, "fds");
    if (!as_list(fds, MAX_FDS) || PyList_GET_SIZE(fds) != n_fds) return -1;
    r->n_targets = n_fds;
    for (int i = 0; i < n_fds; i++) {
        PyObject *t = PyList_GET_ITEM(fds, i);
        if (!PyLong_Check(t)) return -1;
        long v = PyLong_AsLong(t);
        if (PyErr_Occurred()) { PyErr_Clear(); return -1; }
        if (v < 0 || v >= MAX_TARGET) return -1;
        r->targets[i] = (int)v;
    }
    PyObject *argv = item(req, "argv");
    if (!as_list(argv, MAX_ITEMS) || PyList_GET_SIZE(argv) == 0) return -1;
    Py_ssize_t argc = PyList_GET_SIZE(argv);
    char **av = PyMem_Calloc(argc + 1, sizeof(char *));
    if (av == NULL) return -1;
    for (Py_ssize_t i = 0; i < argc; i++)
        if ((av[i] = (char *)as_path(PyList_GET_ITEM(argv, i))) == NULL) return -1;
    r->argv = av;
    r->argv0 = av[0];
    PyObject *env = item(req, "env");
    if (env == NULL || !PyDict_Check(env) || PyDict_GET_SIZE(env) > MAX_ITEMS) return -1;
    Py_ssize_t n_env = PyDict_GET_SIZE(env);
    char **ev = PyMem_Calloc(n_env + 1, sizeof(char *));
    const char **pairs = PyMem_Calloc(2 * n_env + 1, sizeof(char *));
    if (ev == NULL || pairs == NULL) return -1;
    PyObject *k, *v;
    Py_ssize_t pos = 0, j = 0, total = 0;
    const char *path_var = NULL;
    while (PyDict_Next(env, &pos, &k, &v) && j < n_env) {
        const char *ks = as_path(k), *vs = as_path(v);
        if (ks == NULL || vs == NULL || strchr(ks, '=') != NULL) return -1; /* Popen refuses these */
        pairs[2 * j] = ks;
        pairs[2 * j + 1] = vs;
        total += strlen(ks) + strlen(vs) + 2;
        if (total > MAX_REQUEST * 2) return -1;
        if (strcmp(ks, "PATH") == 0) path_var = vs;
        j++;
    }
    char *arena = PyMem_Malloc(total + 1); /* "KEY=value" each, one allocation */
    if (arena == NULL) return -1;
    for (Py_ssize_t i = 0; i < j; i++) {
        ev[i] = arena;
        size_t kl = strlen(pairs[2 * i]), vl = strlen(pairs[2 * i + 1]);
        memcpy(arena, pairs[2 * i], kl);
        arena[kl] = '=';
        memcpy(arena + kl + 1, pairs[2 * i + 1], vl + 1);
        arena += kl + vl + 2;
    }
    r->envp = ev;
    /* subprocess's lookup: argv[0] as it is when it names a directory, else each directory of
       the environment's PATH (os.defpath without one), an empty entry meaning the name itself */
    if (strchr(av[0], '/') != NULL) {
        r->exec_list = PyMem_Calloc(2, sizeof(char *));
        if (r->exec_list == NULL) return -1;
        r->exec_list[0] = av[0];
        r->n_exec = 1;
    } else {
        const char *p = path_var ? path_var : "/bin:/usr/bin";
        Py_ssize_t parts = 1;
        for (const char *c = p; *c; c++) parts += *c == ':';
        if (parts > MAX_ITEMS) return -1;
        r->exec_list = PyMem_Calloc(parts + 1, sizeof(char *));
        if (r->exec_list == NULL) return -1;
        const char *start = p;
        for (Py_ssize_t i = 0; i < parts; i++) {
            const char *end = strchr(start, ':');
            size_t len = end ? (size_t)(end - start) : strlen(start);
            PyObject *dir = PyBytes_FromStringAndSize(start, len);
            if (dir == NULL) { PyErr_Clear(); return -1; }
            int ok = PyList_Append(kept, dir);
            Py_DECREF(dir);
            if (ok < 0) { PyErr_Clear(); return -1; }
            const char *d = PyBytes_AS_STRING(dir);
            if (len == 0) r->exec_list[i] = av[0];
            else if ((r->exec_list[i] = joined(d, d[len - 1] == '/' ? "" : "/", av[0])) == NULL) return -1;
            start = end ? end + 1 : start + len;
        }
        r->n_exec = parts;
    }
    if ((r->cwd = as_bounded_path(item(req, "cwd"))) == NULL) return -1;
    PyObject *abi = item(req, "abi");
    if (abi == NULL || !PyLong_Check(abi)) return -1;
    long abiv = PyLong_AsLong(abi);
    if (PyErr_Occurred()) { PyErr_Clear(); return -1; }
    if (abiv < 0 || abiv > 1000) return -1;
    r->abi = (int)abiv;
    if (item(req, "writable") == NULL || path_list(item(req, "tmpfs"), &r->tmpfs, &r->n_tmpfs) < 0) return -1;
    /* resident.init's `same` */
    r->same = PyDict_GET_SIZE(prepare) > 0;
    static const char *compared[] = {"tmpfs", "abi", "writable"};
    for (int i = 0; i < 3 && r->same; i++) {
        PyObject *p = item(prepare, compared[i]);
        int eq = PyObject_RichCompareBool(item(req, compared[i]), p ? p : Py_None, Py_EQ);
        if (eq < 0) { PyErr_Clear(); return -1; }
        r->same = eq;
    }
    if (!r->same && r->abi) return -1; /* a write layer built on arrival: the Python path */
    PyObject *pt = item(prepare, "tmpfs");
    if (pt != NULL) {
        if (path_list(pt, &r->prep_tmpfs, &r->n_prep_tmpfs) < 0) return -1;
    }
    int asked = namespace_flags(req), prepared = namespace_flags(prepare);
    r->extra_ns = asked & ~prepared;
    r->missing_ns = prepared & ~asked;
    PyObject *masks = item(req, "masks");
    if (!as_list(masks, MAX_ITEMS)) return -1;
    r->n_masks = PyList_GET_SIZE(masks);
    r->masks = PyMem_Calloc(r->n_masks + 1, sizeof(struct step));
    if (r->masks == NULL) return -1;
    for (Py_ssize_t i = 0; i < r->n_masks; i++) {
        PyObject *m = PyList_GET_ITEM(masks, i);
        struct step *s = &r->masks[i];
        s->kind = OP_MASK;
        if (PyList_Check(m)) { /* mask(*m): [path] or [path, where] */
            Py_ssize_t n = PyList_GET_SIZE(m);
            if (n < 1 || n > 2) return -1;
            if ((s->path = as_bounded_path(PyList_GET_ITEM(m, 0))) == NULL) return -1;
            if (n == 2 && where_of(PyList_GET_ITEM(m, 1), &s->where) < 0) return -1;
        } else if ((s->path = as_bounded_path(m)) == NULL) return -1;
    }
    PyObject *binds = item(req, "binds"), *mounts = item(req, "mounts");
    Py_ssize_t nb = 0, nm = 0;
    if (binds != NULL && !as_list(binds, MAX_ITEMS)) return -1;
    if (mounts != NULL && !as_list(mounts, MAX_ITEMS)) return -1;
    nb = binds ? PyList_GET_SIZE(binds) : 0;
    nm = mounts ? PyList_GET_SIZE(mounts) : 0;
    r->mounts = PyMem_Calloc(nb + nm + 1, sizeof(struct step));
    if (r->mounts == NULL) return -1;
    for (Py_ssize_t i = 0; i < nb; i++) { /* [path, kind] -> [kind, path] */
        PyObject *b = PyList_GET_ITEM(binds, i);
        if (!PyList_Check(b) || PyList_GET_SIZE(b) != 2) return -1;
        PyObject *op = PyList_New(2);
        if (op == NULL) { PyErr_Clear(); return -1; }
        Py_INCREF(PyList_GET_ITEM(b, 1)); PyList_SET_ITEM(op, 0, PyList_GET_ITEM(b, 1));
        Py_INCREF(PyList_GET_ITEM(b, 0)); PyList_SET_ITEM(op, 1, PyList_GET_ITEM(b, 0));
        int bad = PyList_Append(kept, op) < 0 || mount_step(op, &r->mounts[i]) < 0;
        Py_DECREF(op);
        if (bad) { PyErr_Clear(); return -1; }
    }
    for (Py_ssize_t i = 0; i < nm; i++)
        if (mount_step(PyList_GET_ITEM(mounts, i), &r->mounts[nb + i]) < 0) return -1;
    r->n_mounts = nb + nm;
    r->steps = truthy(req, "steps");
    return 0;
}

/* ---- what goes wrong, said as Python's OSError says it ---------------------------------------- */

static char why[WHY_SIZE];

static void quoted(char *out, size_t size, const char *s) {
    /* repr() of a str, for the common case (Python picks double quotes only around a quote) */
    char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    size_t o = 0;
    if (o + 1 < size) out[o++] = q;
    for (; *s && o + 5 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\' || c == (unsigned char)q) { out[o++] = '\\'; out[o++] = c; }
        else if (c == '\n') { out[o++] = '\\'; out[o++] = 'n'; }
        else if (c == '\t') { out[o++] = '\\'; out[o++] = 't'; }
        else if (c == '\r') { out[o++] = '\\'; out[o++] = 'r'; }
        else if (c < 0x20 || c == 0x7f) o += snprintf(out + o, size - o, "\\x%02x", c);
        else out[o++] = c;
    }
    if (o + 1 < size) out[o++] = q;
    out[o] = 0;
}

static int fail_file(int err, const char *file) { /* os.stat(file) and the like */
    char q[PATH_MAX + 16];
    quoted(q, sizeof q, file);
    snprintf(why, sizeof why, "[Errno %d] %s: %s", err, strerror(err), q);
    errno = err;
    return -1;
}

static int fail_call(int err, const char *what, const char *arg) { /* resident._check */
    snprintf(why, sizeof why, "[Errno %d] %s%s%s: %s", err, what, arg ? " " : "", arg ? arg : "", strerror(err));
    errno = err;
    return -1;
}

static int fail_named(int err, const char *name) { /* OSError(errno, name) */
    snprintf(why, sizeof why, "[Errno %d] %s", err, name);
    errno = err;
    return -1;
}

static int fail_moved(const char *path) {
    snprintf(why, sizeof why, "%s was moved while the command started", path);
    errno = 0;
    return -1;
}

/* ---- the steps -------------------------------------------------------------------------------- */

static int do_mount(const char *source, const char *target, const char *fstype, unsigned long flags,
                    const char *data) {
    if (mount(source, target, fstype, flags, data) != 0) return fail_call(errno, "mount", target);
    return 0;
}

static int bind_readonly(const char *source, const char *target) {
    /* resident.bind_readonly: keeps the source mount's nosuid, nodev, noexec */
    struct statvfs sv;
    if (do_mount(source, target, NULL, MS_BIND, NULL) < 0) return -1;
    if (statvfs(target, &sv) != 0) return fail_file(errno, target);
    unsigned long kept_flags = sv.f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC);
    return do_mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | kept_flags, NULL);
}

static void split(const char *path, char *parent, size_t size, const char **name) {
    /* os.path.split */
    const char *slash = strrchr(path, '/');
    size_t head = slash ? (size_t)(slash - path) + 1 : 0;
    *name = path + head;
    size_t n = head;
    int all_slashes = 1;
    for (size_t i = 0; i < head; i++) all_slashes &= path[i] == '/';
    if (n > 0 && !all_slashes) while (n > 0 && path[n - 1] == '/') n--;
    if (n >= size) n = size - 1;
    memcpy(parent, path, n);
    parent[n] = 0;
}

static int mask(const char *path, const struct where *w) {
    /* resident.mask: the cover lands in the very directory codebelt found `path` in */
    char parent[PATH_MAX];
    const char *name;
    split(path, parent, sizeof parent, &name);
    int dfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT) return w->given ? fail_moved(path) : 0;
        return fail_file(errno, parent);
    }
    struct stat held, st, now;
    int r = 0;
    if (fstat(dfd, &held) != 0) { r = fail_named(errno, strerror(errno)); goto out; }
    if (w->given && !(w->valid && held.st_dev == w->dev && held.st_ino == w->ino)) { r = fail_moved(path); goto out; }
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) r = fail_file(errno, name);
        goto out;
    }
    if (S_ISLNK(st.st_mode)) goto out;
    if (S_ISDIR(st.st_mode))
        r = do_mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0555");
    else
        r = bind_readonly("/dev/null", path);
    if (r < 0) {
        if (errno == ENOENT && w->given) r = fail_moved(path);
        goto out;
    }
    if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0) { r = fail_file(errno, name); goto out; }
    if (now.st_dev == st.st_dev && now.st_ino == st.st_ino) r = fail_moved(path); /* the cover landed elsewhere */
out:
    close(dfd);
    return r;
}

static int apply_mount(const struct step *s) {
    /* resident.apply_mount: a path gone since codebelt listed it is skipped for pin, ro, mask */
    struct statvfs sv;
    int r;
    switch (s->kind) {
    case OP_PIN: r = do_mount(s->path, s->path, NULL, MS_BIND | MS_REC, NULL); break;
    case OP_RO: r = bind_readonly(s->path, s->path); break;
    case OP_MASK: r = mask(s->path, &s->where); break;
    case OP_SHOW: return bind_readonly(s->source, s->path);
    case OP_READONLY:
        if (statvfs(s->path, &sv) != 0) return fail_file(errno, s->path);
        return do_mount(NULL, s->path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | (sv.f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)), NULL);
    case OP_DEVPTS:
        return do_mount("devpts", s->path, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620");
    default: return fail_named(EINVAL, "unknown mount step");
    }
    if (r < 0 && errno == ENOENT) return 0;
    return r;
}

static int loopback_up(void) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return fail_named(errno, strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    int r = 0;
    if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0) r = fail_named(errno, strerror(errno));
    else {
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) r = fail_named(errno, strerror(errno));
    }
    close(s);
    return r;
}

struct landlock_path_beneath { uint64_t allowed; int32_t fd; } __attribute__((packed));

static int add_outputs(int layer, int abi) {
    /* write_layer.WriteLayer.add_outputs: stdout and stderr when they are regular files */
    uint64_t file_rights = 0x2 | (abi >= 3 ? (1ULL << 14) : 0);
    for (int n = 1; n <= 2; n++) {
        char path[32];
        snprintf(path, sizeof path, "/proc/self/fd/%d", n);
        int fd = open(path, O_PATH | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st;
        if (fstat(fd, &st) != 0) { int e = errno; close(fd); return fail_file(e, path); }
        if (S_ISREG(st.st_mode)) {
            struct landlock_path_beneath rule = {file_rights, fd};
            if (syscall(SYS_LANDLOCK_ADD_RULE, layer, 1, &rule, 0) != 0) {
                int e = errno;
                char what[64];
                snprintf(what, sizeof what, "landlock_add_rule(%s)", path);
                close(fd);
                return fail_named(e, what);
            }
        }
        close(fd);
    }
    return 0;
}

static int drop_capabilities(void) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) != 0) return fail_call(errno, "capset", NULL);
    return 0;
}

static void close_all_but(const int *keep, int n) {
    /* every descriptor from 3 up but `keep` (sorted here) */
    int sorted[MAX_FDS + 8], m = 0;
    for (int i = 0; i < n; i++) {
        int k = keep[i], j = m;
        while (j > 0 && sorted[j - 1] > k) { sorted[j] = sorted[j - 1]; j--; }
        sorted[j] = k;
        m++;
    }
    unsigned int start = 3;
    for (int i = 0; i <= m; i++) {
        unsigned int end = i < m ? (unsigned int)sorted[i] : ~0U;
        if (i < m && sorted[i] < (int)start) continue;
        if (end > start && syscall(SYS_close_range, start, end - 1, 0) != 0) {
            int top = i < m ? (int)end : (int)sysconf(_SC_OPEN_MAX);
            for (int fd = (int)start; fd < top; fd++) close(fd);
        }
        if (i < m) start = end + 1;
    }
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

#define N_STEPS 12
static long long stamps[N_STEPS];
static int n_stamps, want_stamps;
#define STAMP() do { if (want_stamps && n_stamps < N_STEPS) stamps[n_stamps++] = now_ns(); } while (0)

/* ---- the announce, the report ---------------------------------------------------------------- */

static int status_fd = -1, note_fd = -1, announced;

static void taken(void) {
    char t = 't';
    (void)!write(note_fd, &t, 1); /* the resident readies the next zygote */
    close(note_fd);
    note_fd = -1;
}

static void announce(void) {
    /* resident._announce: the resident told it was taken, codebelt its pidfd and pid */
    if (announced) return;
    announced = 1;
    taken();
    int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (pidfd < 0) _exit(1);
    union { char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))]; struct cmsghdr align; } u;
    memset(&u, 0, sizeof u);
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    struct iovec iov;
    static char pid_cred[] = "pid+cred", pid_only[] = "pid";
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    struct cmsghdr *c = (struct cmsghdr *)u.buf;
    c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
    /* its pid as credentials: the kernel gives it to codebelt in codebelt's pid namespace, even
       when the command has ended by the time codebelt reads it (a pidfd then says -1) */
    struct cmsghdr *d = (struct cmsghdr *)(u.buf + CMSG_SPACE(sizeof(int)));
    d->cmsg_level = SOL_SOCKET; d->cmsg_type = SCM_CREDENTIALS; d->cmsg_len = CMSG_LEN(sizeof(struct ucred));
    struct ucred cred = {getpid(), getuid(), getgid()};
    memcpy(CMSG_DATA(d), &cred, sizeof cred);
    iov.iov_base = pid_cred; iov.iov_len = 8;
    msg.msg_controllen = sizeof u.buf;
    ssize_t r;
    while ((r = sendmsg(status_fd, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {}
    if (r < 0 && errno == EPERM) {
        iov.iov_base = pid_only; iov.iov_len = 3;
        msg.msg_controllen = CMSG_SPACE(sizeof(int));
        while ((r = sendmsg(status_fd, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {}
    }
    if (r < 0) _exit(0); /* codebelt gave up on it */
    close(pidfd);
}

static void report(int raw) {
    /* resident._report: at SCHED_IDLE before the status (codebelt, woken onto this CPU, goes
       first), then the status, then the end */
    announce();
    struct sched_param p = {0};
    sched_setscheduler(0, SCHED_IDLE, &p);
    STAMP();
    char buf[64 + N_STEPS * 24];
    int n = snprintf(buf, 64, "status %d", raw);
    if (want_stamps) {
        n += snprintf(buf + n, sizeof buf - n, " steps ");
        for (int i = 0; i < n_stamps; i++)
            n += snprintf(buf + n, sizeof buf - n, i ? ",%lld" : "%lld", stamps[i]);
    }
    while (send(status_fd, buf, n, MSG_NOSIGNAL) < 0 && errno == EINTR) {}
    /* and yield to it: the wake-up does not always mark this (idle-policy) process for
       preemption, and an exit that tears down a fork of the resident's address space runs ~0.7 ms
       in the kernel before codebelt would get this CPU */
    sched_yield();
    _exit(0);
}

static void fail(void) {
    /* resident._fail: said on the command's stderr, reported as a command that exits 126 */
    char text[WHY_SIZE + 128];
    int n = snprintf(text, sizeof text,
                     "codebelt jail: the command could not be started in the jail (%s); it did not run\n", why);
    if (n > (int)sizeof text - 1) n = sizeof text - 1;
    (void)!write(2, text, n);
    report(126 << 8);
}

/* ---- the init ---------------------------------------------------------------------------------- */

static volatile int exec_errno; /* written by the vfork child, which shares this memory */

static void run(struct request *r, int *fds, int layer) {
    int above = 2;
    for (int i = 0; i < r->n_targets; i++) if (r->targets[i] > above) above = r->targets[i];
    above += 1;
    int high[MAX_FDS];
    /* every descriptor kept above the targets first: no dup2 below clobbers one */
    for (int i = 0; i < r->n_targets; i++)
        if ((high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, above)) < 0) { fail_named(errno, strerror(errno)); fail(); }
    if ((status_fd = fcntl(status_fd, F_DUPFD_CLOEXEC, above)) < 0) _exit(1);
    if ((note_fd = fcntl(note_fd, F_DUPFD_CLOEXEC, above)) < 0) { fail_named(errno, strerror(errno)); fail(); }
    if (layer >= 0 && (layer = fcntl(layer, F_DUPFD_CLOEXEC, above)) < 0) { fail_named(errno, strerror(errno)); fail(); }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) { fail_file(errno, "/dev/null"); fail(); }
    int placed = dup2(null, 0) == 0;
    for (int n = 1; n <= 2; n++) {
        int asked = 0;
        for (int i = 0; i < r->n_targets; i++) asked |= r->targets[i] == n;
        if (!asked) placed &= dup2(null, n) == n;
    }
    for (int i = 0; i < r->n_targets; i++) placed &= dup2(high[i], r->targets[i]) == r->targets[i];
    if (!placed) { fail_named(errno, strerror(errno)); fail(); }
    /* from here on, what goes wrong is said on the command's stderr */
    STAMP();
    int keep[MAX_FDS + 4], nk = 0;
    for (int i = 0; i < r->n_targets; i++) keep[nk++] = r->targets[i];
    keep[nk++] = status_fd;
    keep[nk++] = note_fd;
    if (layer >= 0) keep[nk++] = layer;
    close_all_but(keep, nk);
    STAMP();
    if (!r->same) { /* asked for another scratch than prepared (and no write layer): all of it now */
        if (layer >= 0) { close(layer); layer = -1; }
        for (Py_ssize_t i = r->n_prep_tmpfs - 1; i >= 0; i--)
            if (umount2(r->prep_tmpfs[i], MNT_DETACH) != 0) { fail_call(errno, "umount", r->prep_tmpfs[i]); fail(); }
        for (Py_ssize_t i = 0; i < r->n_tmpfs; i++)
            if (do_mount("tmpfs", r->tmpfs[i], "tmpfs", MS_NOSUID | MS_NODEV,
                         strcmp(r->tmpfs[i], "/dev/shm") ? "mode=0700" : "mode=1777") < 0) fail();
    }
    if (r->missing_ns) {
        snprintf(why, sizeof why, "the resident was prepared with namespaces this command does not ask for");
        fail();
    }
    if (r->extra_ns) {
        if (unshare(r->extra_ns) != 0) { fail_call(errno, "unshare", NULL); fail(); }
        if ((r->extra_ns & CLONE_NEWNET) && loopback_up() < 0) fail();
    }
    for (Py_ssize_t i = 0; i < r->n_masks; i++) if (mask(r->masks[i].path, &r->masks[i].where) < 0) fail();
    for (Py_ssize_t i = 0; i < r->n_mounts; i++) if (apply_mount(&r->mounts[i]) < 0) fail();
    STAMP();
    if (chdir(r->cwd) != 0) { fail_file(errno, r->cwd); fail(); }
    if (drop_capabilities() < 0) fail();
    STAMP();
    if (r->abi) {
        if (layer < 0) { snprintf(why, sizeof why, "no write layer was prepared"); fail(); }
        if (add_outputs(layer, r->abi) < 0) fail();
        STAMP();
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) { fail_named(errno, "prctl(PR_SET_NO_NEW_PRIVS)"); fail(); }
        if (syscall(SYS_LANDLOCK_RESTRICT_SELF, layer, 0) != 0) { fail_named(errno, "landlock_restrict_self"); fail(); }
        close(layer);
        layer = -1;
    } else STAMP();
    STAMP();
    /* vfork + exec as subprocess.Popen does it: SIGPIPE and SIGXFSZ back to their default (this
       init ignores them, and exec keeps what is ignored), no signal blocked (none is here), every
       descriptor but the targets closed (all others are close-on-exec here) */
    exec_errno = 0;
    pid_t command = vfork();
    if (command == 0) {
        signal(SIGPIPE, SIG_DFL);
        signal(SIGXFSZ, SIG_DFL);
        int first = 0;
        for (Py_ssize_t i = 0; i < r->n_exec; i++) {
            execve(r->exec_list[i], r->argv, r->envp);
            if (errno != ENOENT && errno != ENOTDIR && first == 0) first = errno;
        }
        exec_errno = first ? first : errno ? errno : ENOENT; /* the first error, not the last, as subprocess */
        _exit(255);
    }
    if (command < 0 || exec_errno) { /* as a shell says it */
        int e = command < 0 ? errno : exec_errno;
        if (command > 0) while (waitpid(command, NULL, 0) < 0 && errno == EINTR) {}
        char text[PATH_MAX + 256];
        int n = snprintf(text, sizeof text, "%s: %s\n", r->argv0, strerror(e));
        if (n > (int)sizeof text - 1) n = sizeof text - 1;
        (void)!write(2, text, n);
        report(127 << 8);
    }
    STAMP();
    announce();
    STAMP();
    int null2 = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int n = 0; n <= 2; n++) dup2(null2 >= 0 ? null2 : null, n); /* the command's output is the command's */
    int only[1] = {status_fd};
    close_all_but(only, 1);
    int raw = 0;
    for (;;) { /* orphans come to pid 1: reaped on the way */
        pid_t pid = waitpid(-1, &raw, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            report(127 << 8);
        }
        if (pid == command) break;
    }
    STAMP();
    /* resident.end_the_rest: kill(-1) from pid 1 reaches every process of the namespace, and
       every one is this init's descendant: no child left means no process left */
    kill(-1, SIGKILL);
    for (;;) {
        if (waitpid(-1, NULL, 0) < 0 && errno != EINTR) break;
    }
    report(raw);
}

/* ---- the entry point ----------------------------------------------------------------------- */

static PyObject *serve(PyObject *self, PyObject *args) {
    int control, note, layer;
    PyObject *prepare;
    if (!PyArg_ParseTuple(args, "iiiO!", &control, &note, &layer, &PyDict_Type, &prepare)) return NULL;
    /* an anonymous mapping: its pages cost only where the message is written */
    char *buffer = mmap(NULL, MAX_REQUEST, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffer == MAP_FAILED) return PyErr_SetFromErrno(PyExc_OSError);
    union { char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)]; struct cmsghdr align; } u;
    struct iovec iov = {buffer, MAX_REQUEST};
    struct msghdr msg;
    ssize_t size;
    do {
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = u.buf;
        msg.msg_controllen = sizeof u.buf;
        size = recvmsg(control, &msg, MSG_CMSG_CLOEXEC);
    } while (size < 0 && errno == EINTR);
    want_stamps = 1; /* kept only if the request asks */
    STAMP();
    if (size < 0) _exit(1); /* as an exception would end the Python path's zygote: the resident makes another */
    if (size == 0) { /* codebelt closed its end: the session is over */
        char e = 'e';
        (void)!write(note, &e, 1);
        _exit(0);
    }
    close(control);
    int fds[MAX_FDS], n = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count && n < MAX_FDS; i++) memcpy(&fds[n++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    note_fd = note;
    if (n == 0) { taken(); _exit(0); }
    status_fd = fds[0];
    kept = PyList_New(0);
    PyObject *req = (msg.msg_flags & MSG_TRUNC) ? NULL : PyMarshal_ReadObjectFromString(buffer, size);
    struct request r;
    if (kept != NULL && req != NULL && parse(req, n - 1, prepare, &r) == 0) {
        want_stamps = r.steps;
        STAMP();
        run(&r, fds + 1, layer); /* never returns */
    }
    /* not one this path takes: handed back whole to the Python path */
    PyErr_Clear();
    Py_XDECREF(req);
    Py_CLEAR(kept);
    PyObject *raw = PyBytes_FromStringAndSize(buffer, size);
    munmap(buffer, MAX_REQUEST);
    if (raw == NULL) return NULL;
    PyObject *list = PyList_New(n);
    if (list == NULL) { Py_DECREF(raw); return NULL; }
    for (int i = 0; i < n; i++) PyList_SET_ITEM(list, i, PyLong_FromLong(fds[i]));
    return Py_BuildValue("(NN)", raw, list);
}

static PyObject *warm_up(PyObject *self, PyObject *args) {
    /* resident.warm_up's part for this path: a zygote is a fresh fork, and the first touch of
       each page the parse writes (the allocator's, the objects') copies it; touched now, on a
       sample request, they are its own when the request comes */
    Py_buffer sample;
    int n_fds;
    PyObject *prepare;
    if (!PyArg_ParseTuple(args, "y*iO!", &sample, &n_fds, &PyDict_Type, &prepare)) return NULL;
    kept = PyList_New(0);
    PyObject *req = kept ? PyMarshal_ReadObjectFromString(sample.buf, sample.len) : NULL;
    PyBuffer_Release(&sample);
    struct request r;
    int taken_here = req != NULL && parse(req, n_fds, prepare, &r) == 0;
    PyErr_Clear();
    Py_XDECREF(req);
    Py_CLEAR(kept);
    (void)now_ns();
    return PyBool_FromLong(taken_here);
}

static PyMethodDef methods[] = {
    {"warm_up", warm_up, METH_VARARGS,
     "warm_up(sample, n_fds, prepare): parse a sample request as `serve` would; whether it would take it."},
    {"serve", serve, METH_VARARGS,
     "serve(control_fd, note_fd, layer_fd, prepare): read one request and be its command's init "
     "(never returns), or return (message, descriptors) for a request left to the Python path."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_zygote", NULL, -1, methods};

PyMODINIT_FUNC PyInit__zygote(void) { return PyModule_Create(&module); }
