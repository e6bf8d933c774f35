"""The hand-written C every native extension module carries, around the generated kernels.

:mod:`._c_extension` emits, per kernel, a one-state and a batch function and their module functions;
they call the shared runtime here (C text, put in each module's translation unit after the kernels'
prelude):

* the calling convention (``METH_FASTCALL``) and argument reading: NumPy arrays through NumPy's C API,
  other buffers through the buffer protocol, lists and tuples of floats item by item
  (``rd_read``, ``rd_single``);
* batches (``rd_batch``): lengths checked, the GIL released from ``RD_GIL_BATCH`` states on, the loop
  split over threads into runs of whole lane blocks (``rd_parallel``), and the result allocated here
  (``rd_new_out``) from a small pool of large blocks that are kept when their array is freed.
"""

RUNTIME = r"""
/* -- calling convention (METH_FASTCALL) ----------------------------------------------------------
 * one state:  e(a0, ..., ak)       -> float64 array of the entry's shape, or None when an argument is
 *                                      not a float64 vector of its length (a C-contiguous buffer, or
 *                                      a list/tuple of floats and ints) or an input or output is not
 *                                      finite: the caller then takes its general, validating path.
 *             e(a0, ..., ak, out)  -> status (0; 1: an input is not finite; 2: an output is not);
 *                                      the outputs are written to the float64 buffer out either way.
 * a batch:    e_batch(a0, ..., ak, out[, threads]): C-contiguous float64 buffers of count * size, or
 *                                      out None: a new (count, n_out) array is returned (rd_new_out);
 *                                      the loop runs in C, without the GIL from RD_GIL_BATCH states on, on
 *                                      up to `threads` threads (default 1) with at least RD_THREAD_BATCH
 *                                      states each. Every state is computed alone (lanes never mix), so
 *                                      the values do not depend on the split. */
#define RD_GIL_BATCH 64
#define RD_THREAD_BATCH 4096
#define RD_MAX_THREADS 64

typedef void (*rd_one_fn)(const double *in, double *out);
typedef void (*rd_loop_fn)(long count, const double *const *in, double *out);

typedef struct {
    rd_loop_fn loop;
    long count;
    const double *in[RD_MAX_ARGS];
    double *out;
} rd_job;

static void *rd_run_job(void *arg)
{
    const rd_job *job = (const rd_job *)arg;
    job->loop(job->count, job->in, job->out);
    return NULL;
}

/* the loop over count states cut into up to `threads` runs of whole lane blocks, the first run on the
   calling thread; a thread that cannot be started leaves its run to the calling thread */
static void rd_parallel(rd_loop_fn loop, long count, int k, const Py_ssize_t *sizes, Py_ssize_t n_out,
                        const double *const *in, double *out, long threads)
{
    if (threads > count / RD_THREAD_BATCH) threads = count / RD_THREAD_BATCH;
    if (threads > RD_MAX_THREADS) threads = RD_MAX_THREADS;
    if (threads <= 1) {
        loop(count, in, out);
        return;
    }
    rd_job jobs[RD_MAX_THREADS];
    pthread_t ids[RD_MAX_THREADS];
    int started[RD_MAX_THREADS] = {0};
    const long per = ((count + threads - 1) / threads + RD_LANES - 1) / RD_LANES * RD_LANES;
    long runs = 0;
    for (long start = 0; start < count; start += per, ++runs) {
        rd_job *job = &jobs[runs];
        job->loop = loop;
        job->count = count - start < per ? count - start : per;
        for (int i = 0; i < k; ++i) job->in[i] = in[i] + start * sizes[i];
        job->out = out + start * n_out;
    }
    for (long t = 1; t < runs; ++t) started[t] = pthread_create(&ids[t], NULL, rd_run_job, &jobs[t]) == 0;
    rd_run_job(&jobs[0]);
    for (long t = 1; t < runs; ++t) {
        if (started[t]) pthread_join(ids[t], NULL);
        else rd_run_job(&jobs[t]);
    }
}


static int rd_is_double(const Py_buffer *view)
{
    if (view->itemsize != 8 || view->format == NULL) return 0;
    const char *f = view->format;
#if PY_LITTLE_ENDIAN
    if (*f == '<') ++f;
#endif
    if (*f == '=' || *f == '@') ++f;
    return f[0] == 'd' && f[1] == '\0';
}

/* size doubles from obj into dst; 0 on success, 1 if obj is not such a vector (no exception set) */
static int rd_read(PyObject *obj, double *dst, Py_ssize_t size)
{
    if (PyArray_CheckExact(obj)) {
        PyArrayObject *a = (PyArrayObject *)obj;
        if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != size || PyArray_TYPE(a) != NPY_DOUBLE ||
            !PyArray_ISCARRAY_RO(a) || !PyArray_ISNOTSWAPPED(a))
            return 1;
        memcpy(dst, PyArray_DATA(a), (size_t)size * sizeof(double));
        return 0;
    }
    if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
        if (PySequence_Fast_GET_SIZE(obj) != size) return 1;
        PyObject **items = PySequence_Fast_ITEMS(obj);
        for (Py_ssize_t i = 0; i < size; ++i) {
            PyObject *item = items[i];
            if (PyFloat_Check(item)) dst[i] = PyFloat_AS_DOUBLE(item);
            else if (PyLong_CheckExact(item)) {
                dst[i] = PyLong_AsDouble(item);
                if (dst[i] == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 1; }
            }
            else return 1;
        }
        return 0;
    }
    Py_buffer view;
    if (!PyObject_CheckBuffer(obj) || PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return 1;
    }
    const int ok = view.ndim == 1 && view.shape[0] == size && rd_is_double(&view);
    if (ok) memcpy(dst, view.buf, (size_t)size * sizeof(double));
    PyBuffer_Release(&view);
    return !ok;
}

static int rd_all_finite(const double *x, Py_ssize_t size)
{
    for (Py_ssize_t i = 0; i < size; ++i)
        if (!isfinite(x[i])) return 0;
    return 1;
}

static PyObject *rd_single(const char *name, PyObject *const *args, Py_ssize_t nargs, int k, const Py_ssize_t *sizes,
                           Py_ssize_t n_out, int nd, npy_intp *dims, rd_one_fn one)
{
    double in[RD_MAX_IN], out[RD_MAX_OUT];
    Py_ssize_t offset = 0;
    if (nargs == k) {
        for (int i = 0; i < k; offset += sizes[i], ++i)
            if (rd_read(args[i], in + offset, sizes[i])) Py_RETURN_NONE;
        if (!rd_all_finite(in, offset)) Py_RETURN_NONE;
        rd_single_state = 1;
        one(in, out);
        rd_single_state = 0;
        if (!rd_all_finite(out, n_out)) Py_RETURN_NONE;
        PyObject *array = PyArray_SimpleNew(nd, dims, NPY_DOUBLE);
        if (array == NULL) return NULL;
        memcpy(PyArray_DATA((PyArrayObject *)array), out, (size_t)n_out * sizeof(double));
        return array;
    }
    if (nargs != k + 1)
        return PyErr_Format(PyExc_TypeError, "%s: expected %d or %d arguments, got %zd", name, k, k + 1, nargs);
    for (int i = 0; i < k; offset += sizes[i], ++i)
        if (rd_read(args[i], in + offset, sizes[i]))
            return PyErr_Format(PyExc_TypeError, "%s: argument %d is not a float64 vector of length %zd", name, i,
                                sizes[i]);
    Py_buffer view;
    if (PyObject_GetBuffer(args[k], &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (!rd_is_double(&view) || view.len != n_out * (Py_ssize_t)sizeof(double)) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_TypeError, "%s: out is not a writable float64 buffer of %zd values", name, n_out);
    }
    const int status = rd_all_finite(in, offset) ? 0 : 1;
    rd_single_state = 1;
    one(in, out);
    rd_single_state = 0;
    memcpy(view.buf, out, (size_t)n_out * sizeof(double));
    PyBuffer_Release(&view);
    return PyLong_FromLong(status ? status : rd_all_finite(out, n_out) ? 0 : 2);
}

/* Outputs of a batch called with out=None. Blocks of RD_POOL_MIN bytes and more are kept for reuse
 * when their array is freed (at most RD_POOL_SLOTS per module): glibc hands blocks above 32 MB back to
 * the kernel on free, and a fresh block costs its page faults and the kernel's zeroing again — a
 * third of a 100k-state 7-DoF D batch. Smaller blocks are glibc's own to reuse. The GIL is held
 * wherever the pool is touched (allocation here, release in the capsule's destructor). */
#define RD_POOL_MIN (1L << 24)
#define RD_POOL_SLOTS 2
static void *rd_pool[RD_POOL_SLOTS];
static size_t rd_pool_bytes[RD_POOL_SLOTS];

static void rd_pool_release(PyObject *capsule)
{
    void *block = PyCapsule_GetPointer(capsule, "robot_dynamics.batch_out");
    const size_t bytes = (size_t)PyCapsule_GetContext(capsule);
    int slot = 0; /* an empty slot, else the one holding the smallest block */
    for (int i = 0; i < RD_POOL_SLOTS; ++i) {
        if (rd_pool[i] == NULL) {
            slot = i;
            break;
        }
        if (rd_pool_bytes[i] < rd_pool_bytes[slot]) slot = i;
    }
    if (rd_pool[slot] != NULL && rd_pool_bytes[slot] >= bytes) {
        free(block); /* every slot holds a block at least as large: keep those */
        return;
    }
    free(rd_pool[slot]);
    rd_pool[slot] = block;
    rd_pool_bytes[slot] = bytes;
}

static PyObject *rd_new_out(Py_ssize_t count, Py_ssize_t n_out)
{
    npy_intp dims[2] = {count, n_out};
    const size_t bytes = (size_t)count * (size_t)n_out * sizeof(double);
    if (bytes < (size_t)RD_POOL_MIN) return PyArray_SimpleNew(2, dims, NPY_DOUBLE);
    void *block = NULL;
    for (int i = 0; i < RD_POOL_SLOTS && block == NULL; ++i)
        if (rd_pool[i] != NULL && rd_pool_bytes[i] == bytes) {
            block = rd_pool[i];
            rd_pool[i] = NULL;
        }
    if (block == NULL && (block = malloc(bytes)) == NULL) return PyErr_NoMemory();
    PyObject *capsule = PyCapsule_New(block, "robot_dynamics.batch_out", rd_pool_release);
    if (capsule == NULL || PyCapsule_SetContext(capsule, (void *)bytes) < 0) {
        if (capsule == NULL) free(block);
        Py_XDECREF(capsule);
        return NULL;
    }
    PyObject *array = PyArray_SimpleNewFromData(2, dims, NPY_DOUBLE, block);
    if (array == NULL || PyArray_SetBaseObject((PyArrayObject *)array, capsule) < 0) {
        Py_XDECREF(array);
        if (array == NULL) Py_DECREF(capsule);
        return NULL;
    }
    return array;
}

/* e_batch(a0, ..., ak, out[, threads]): out a writable buffer (-> None) or None (-> a new
   (count, n_out) array) */
static PyObject *rd_batch(const char *name, PyObject *const *args, Py_ssize_t nargs, int k, const Py_ssize_t *sizes,
                          Py_ssize_t n_out, rd_loop_fn loop)
{
    Py_buffer views[RD_MAX_ARGS + 1];
    const double *in[RD_MAX_ARGS];
    PyObject *result = NULL;
    int got = 0;
    long threads = 1;
    if (nargs == k + 2) {
        threads = PyLong_AsLong(args[k + 1]);
        if (threads == -1 && PyErr_Occurred()) return NULL;
        if (threads < 1) return PyErr_Format(PyExc_ValueError, "%s: threads must be at least 1", name);
    }
    else if (nargs != k + 1)
        return PyErr_Format(PyExc_TypeError, "%s: expected %d or %d arguments, got %zd", name, k + 1, k + 2, nargs);
    const int allocate = args[k] == Py_None;
    for (; got <= k - allocate; ++got) {
        const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got == k ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(args[got], &views[got], flags) < 0) goto done;
        if (!rd_is_double(&views[got])) {
            PyErr_Format(PyExc_TypeError, "%s: argument %d is not a C-contiguous float64 array", name, got);
            ++got;
            goto done;
        }
    }
    {
        const Py_ssize_t count = allocate ? views[0].len / (sizes[0] * (Py_ssize_t)sizeof(double))
                                          : views[k].len / (n_out * (Py_ssize_t)sizeof(double));
        if (!allocate && views[k].len != count * n_out * (Py_ssize_t)sizeof(double)) {
            PyErr_Format(PyExc_ValueError, "%s: out holds %zd bytes, not a multiple of %zd values", name,
                         views[k].len, n_out);
            goto done;
        }
        for (int i = 0; i < k; ++i) {
            if (views[i].len != count * sizes[i] * (Py_ssize_t)sizeof(double)) {
                PyErr_Format(PyExc_ValueError, "%s: argument %d holds %zd values, expected %zd x %zd", name, i,
                             views[i].len / (Py_ssize_t)sizeof(double), count, sizes[i]);
                goto done;
            }
            in[i] = (const double *)views[i].buf;
        }
        PyObject *array = Py_None;
        if (allocate) {
            if ((array = rd_new_out(count, n_out)) == NULL) goto done;
        }
        else Py_INCREF(array);
        double *out = allocate ? (double *)PyArray_DATA((PyArrayObject *)array) : (double *)views[k].buf;
        if (count >= RD_GIL_BATCH) {
            Py_BEGIN_ALLOW_THREADS
            rd_parallel(loop, (long)count, k, sizes, n_out, in, out, threads);
            Py_END_ALLOW_THREADS
        }
        else if (count > 0) {
            loop((long)count, in, out);
        }
        result = array;
    }
done:
    for (int i = 0; i < got; ++i) PyBuffer_Release(&views[i]);
    return result;
}
"""
