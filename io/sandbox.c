/* The child program that reads untrusted files, and its pipes (sandbox.h). */
#include "sandbox.h"
#include "check.h"
#include "log.h"
#include "mtrain.h"
#include "resources.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int sandbox_enabled = 1;

/* The child's environment variable: "READER:REQUEST_FD:RESULT_FD". */
#define SANDBOX_ENV "MTRAIN_SANDBOX"
/* The error text the child sends back is at most this long: the whole of
 * a user error (a checkpoint of another model lists every mismatch). */
#define SANDBOX_TEXT_MAX USER_ERROR_MAX

void sandbox_move(struct sandbox_pipe *p, void *buf, size_t len)
{
	char *at = buf;
	while (len && !p->failed) {
		ssize_t got = p->sending ? write(p->fd, at, len) : read(p->fd, at, len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			p->failed = 1;
		else {
			at += got;
			len -= (size_t)got;
		}
	}
	if (p->failed && !p->sending)
		memset(at, 0, len);
}

void sandbox_move_str(struct sandbox_pipe *p, char **s, size_t max)
{
	size_t len = p->sending && *s ? strlen(*s) + 1 : 0;
	sandbox_move(p, &len, sizeof(len));
	if (!p->sending) {
		p->failed |= len > max;
		*s = len && !p->failed ? xmalloc(len) : NULL;
	}
	sandbox_move(p, *s, *s ? len : 0);
	if (!p->sending && *s)
		(*s)[len - 1] = 0;
}

static const struct sandbox_reader *const readers[] = {
	&ckpt_sandbox_reader, &dataset_sandbox_reader, &weights_sandbox_reader};

/* The child, before main: receives the request, reads, sends its return
 * value, its user error and the result, and exits. */
__attribute__((constructor)) static void child(void)
{
	const char *env = getenv(SANDBOX_ENV);
	char name[32];
	int in = -1, out = -1;
	if (!env || sscanf(env, "%31[a-z]:%d:%d", name, &in, &out) != 3)
		return;
	check_in_child();
	signal(SIGPIPE, SIG_DFL);
	const struct sandbox_reader *r = NULL;
	for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++)
		if (!strcmp(readers[i]->name, name))
			r = readers[i];
	if (!r)
		_exit(CHECK_CHILD_FAILED);
	void *arg = xcalloc(1, r->arg_size);
	struct sandbox_pipe ask = {.fd = in}, p = {.fd = out, .sending = 1};
	struct resources_state budget;
	sandbox_move(&ask, &budget, sizeof(budget));
	resources_restore(&budget);
	r->ask(arg, &ask);
	if (ask.failed)
		_exit(CHECK_CHILD_FAILED);
	/* A test's crash, as HDF5's on a forged file: MTRAIN_TEST_FAULT=reader
	 * on every file, reader:TEXT on the requests that hold TEXT (the
	 * file's path comes first in each). */
	const char *fault = getenv("MTRAIN_TEST_FAULT");
	const char *path = *(char **)arg;
	if (fault && !strncmp(fault, "reader", 6) &&
	    (!fault[6] || (fault[6] == ':' && path && strstr(path, fault + 7))))
		raise(SIGSEGV);
	/* MTRAIN_TEST_FAULT=slowreader: a read that takes 2 s more, for a
	 * test's signal to arrive during it. */
	if (fault && !strcmp(fault, "slowreader"))
		sleep(2);
	int rc = r->read(arg);
	size_t len = strlen(user_error_text());
	sandbox_move(&p, &rc, sizeof(rc));
	sandbox_move(&p, &len, sizeof(len));
	sandbox_move(&p, (void *)user_error_text(), len);
	if (rc == 0)
		r->move(arg, &p);
	fflush(NULL);
	_exit(p.failed ? CHECK_CHILD_FAILED : 0);
}

/* Starts the child with the request pipe's read end and the result pipe's
 * write end: its pid, or -1. Between fork and exec the child only makes
 * async-signal-safe calls. */
static pid_t start_child(const struct sandbox_reader *r, int req, int res)
{
	char var[96];
	snprintf(var, sizeof(var), SANDBOX_ENV "=%s:%d:%d", r->name, req, res);
	size_t n = 0;
	while (environ[n])
		n++;
	char **envp = xcalloc(n + 2, sizeof(*envp));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], SANDBOX_ENV "=", sizeof(SANDBOX_ENV)))
			envp[k++] = environ[i];
	envp[k] = var;
	char *argv[] = {"mtrain-reader", NULL};
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		/* mpirun sends Slurm's USR1 (and TERM) to the rank's whole
		 * process group: the rank acts on it, the reader must not die
		 * of it (ignored stays ignored across exec). */
		struct sigaction ign = {.sa_handler = SIG_IGN};
		sigaction(SIGUSR1, &ign, NULL);
		sigaction(SIGTERM, &ign, NULL);
		fcntl(req, F_SETFD, 0); /* kept across exec: the others close */
		fcntl(res, F_SETFD, 0);
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	free(envp);
	return pid;
}

int sandbox_read(const char *path, const struct sandbox_reader *r, void *arg)
{
	int req[2], res[2];
	if (!sandbox_enabled)
		return r->read(arg);
	if (pipe2(req, O_CLOEXEC))
		return r->read(arg); /* out of descriptors: read as before */
	if (pipe2(res, O_CLOEXEC)) {
		close(req[0]);
		close(req[1]);
		return r->read(arg);
	}
	pid_t pid = start_child(r, req[0], res[1]);
	close(req[0]);
	close(res[1]);
	if (pid < 0) {
		close(req[1]);
		close(res[0]);
		return r->read(arg);
	}
	/* A child that died before reading its request must not kill us. */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigaction(SIGPIPE, &ign, &old);
	struct sandbox_pipe ask = {.fd = req[1], .sending = 1};
	struct resources_state budget; /* the parent's, checked against there too */
	resources_save(&budget);
	sandbox_move(&ask, &budget, sizeof(budget));
	r->ask(arg, &ask);
	close(req[1]);
	sigaction(SIGPIPE, &old, NULL);
	struct sandbox_pipe p = {.fd = res[0]};
	int rc = RC_CORRUPT;
	size_t len = 0;
	char text[SANDBOX_TEXT_MAX];
	sandbox_move(&p, &rc, sizeof(rc));
	sandbox_move(&p, &len, sizeof(len));
	if (len >= sizeof(text))
		p.failed = 1;
	sandbox_move(&p, text, p.failed ? 0 : len);
	text[p.failed ? 0 : len] = 0;
	if (!p.failed && rc == 0)
		r->move(arg, &p);
	close(res[0]); /* a child with more to send dies of SIGPIPE: a crash */
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	if (code == 127)
		return r->read(arg); /* /proc/self/exe would not start: read here */
	if (p.failed || code != 0) {
		char how[64];
		if (sig)
			snprintf(how, sizeof(how), "signal %d", sig);
		else
			snprintf(how, sizeof(how), "exit status %d", code);
		/* A crash, or what the parent was sent failed its bounds: the
		 * file. Killed from outside (out of memory?) or out of memory
		 * in the child: not the file, which must not be skipped for it. */
		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
		    sig == SIGABRT || sig == SIGPIPE || code == 0 ||
		    (code > 0 && code != CHECK_CHILD_FAILED)) {
			user_error("%s: reading it crashed the reader (%s, in a child process): "
				   "the file is damaged or forged", path, how);
			return RC_CORRUPT;
		}
		user_error("%s: the process reading it ended before it was read (%s; out of "
			   "memory?)", path, how);
		return RC_USER;
	}
	if (rc && text[0])
		user_error("%s", text);
	return rc;
}
