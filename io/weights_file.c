/* Weights files that are not mtrain checkpoints (weights_file.h): the
 * kind of a file by its first bytes, reading it in a child process
 * (sandbox.h), and writing a file of Keras' into place. Each kind's own
 * reader is a file of its own (weights_io.h). */
#include "weights_file.h"
#include "weights_io.h"
#include "check.h"
#include "ckpt_file.h"
#include "log.h"
#include "paths.h"
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const weights_kind_names[] = {"an mtrain checkpoint", "safetensors", "a .keras model",
					  "a Keras .weights.h5"};

int weights_read_here(const char *path, enum weights_kind *kind, struct ckpt_var **vars, int *n)
{
	static const unsigned char hdf5_sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	struct tensors t = {0};
	*vars = NULL;
	*n = 0;
	unsigned char head[9] = {0};
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK); /* a FIFO must not block: refused below */
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		int rc = user_error("%s: cannot open: %s", path, fd < 0 ? strerror(errno)
									: "not a regular file");
		if (fd >= 0)
			close(fd);
		return rc;
	}
	ssize_t got = pread(fd, head, 9, 0);
	uint64_t hlen;
	memcpy(&hlen, head, 8);
	int rc = 0;
	if (got >= 4 && !memcmp(head, "PK\3\4", 4)) {
		*kind = WEIGHTS_KERAS;
		rc = weights_read_keras_zip(path, &t);
	} else if (got >= 8 && !memcmp(head, hdf5_sig, 8)) {
		hid_t f = weights_open_h5(path, NULL, 0);
		int is_keras = 0;
		if (f < 0)
			rc = user_error("%s: begins as HDF5 but HDF5 cannot open it", path);
		else if (H5Lexists(f, "model_weights", H5P_DEFAULT) > 0 ||
			 H5Aexists(f, "layer_names") > 0)
			rc = user_error("%s: a legacy Keras HDF5 file (Keras 2, tf.keras): load it in "
					"Keras 3 and save it as .keras or .weights.h5", path);
		else
			rc = weights_read_keras_h5(path, f, &t, &is_keras);
		if (f >= 0)
			H5Fclose(f);
		*kind = is_keras ? WEIGHTS_KERAS_H5 : WEIGHTS_CKPT;
	} else if (got == 9 && head[8] == '{' && hlen <= SAFETENSORS_HEADER_MAX && (off_t)hlen <= st.st_size - 8) {
		*kind = WEIGHTS_SAFETENSORS;
		rc = weights_read_safetensors(path, fd, st.st_size, &t);
	} else {
		rc = user_error("%s: not an mtrain checkpoint, safetensors, .keras or Keras .weights.h5 "
				"file (by its first bytes)", path);
	}
	close(fd);
	if (rc) {
		ckpt_free_vars(t.v, t.n);
		return RC_CORRUPT;
	}
	*vars = t.v;
	*n = t.n;
	return 0;
}

/* ---- in a child process (sandbox.h) ---- */

#define SENT_PATH_MAX ((size_t)1 << 16)
#define SENT_VARS_MAX (1 << 20)

struct read_args {
	char *path; /* first, as sandbox.h asks */
	enum weights_kind kind;
	struct ckpt_var *vars;
	int n;
};

static void read_ask(void *arg, struct sandbox_pipe *p)
{
	struct read_args *a = arg;
	sandbox_move_str(p, &a->path, SENT_PATH_MAX);
	p->failed |= !p->sending && !a->path;
}

static int read_child(void *arg)
{
	struct read_args *a = arg;
	return weights_read_here(a->path, &a->kind, &a->vars, &a->n);
}

/* The kind, how many tensors, then each one's name, shape and values. */
static void read_move(void *arg, struct sandbox_pipe *p)
{
	struct read_args *a = arg;
	sandbox_move(p, &a->kind, sizeof(a->kind));
	sandbox_move(p, &a->n, sizeof(a->n));
	p->failed |= a->n < 0 || a->n > SENT_VARS_MAX || a->kind < WEIGHTS_CKPT ||
		     a->kind > WEIGHTS_KERAS_H5;
	if (!p->sending && !p->failed)
		a->vars = xcalloc((size_t)a->n + 1, sizeof(*a->vars));
	for (int i = 0; i < a->n && !p->failed; i++) {
		ckpt_var_move_head(p, &a->vars[i]);
		ckpt_var_move_data(p, &a->vars[i]);
	}
}

const struct sandbox_reader weights_sandbox_reader = {
	.name = "weights",
	.arg_size = sizeof(struct read_args),
	.ask = read_ask,
	.read = read_child,
	.move = read_move,
};

int weights_read(const char *path, enum weights_kind *kind, struct ckpt_var **vars, int *n)
{
	struct read_args a = {.path = (char *)path};
	int rc = sandbox_read(path, &weights_sandbox_reader, &a);
	if (rc) {
		ckpt_free_vars(a.vars, a.n);
		a.vars = NULL;
		a.n = 0;
	}
	*kind = a.kind;
	*vars = a.vars;
	*n = a.n;
	return rc;
}

int weights_write_file(const char *out, const void *bytes, size_t len)
{
	char tmp[FILE_PATH_LEN];
	FILE *f = path_create_temp(out, tmp, sizeof(tmp));
	if (!f)
		return -1;
	fwrite(bytes, 1, len, f);
	return path_commit_temp(f, tmp, out);
}
