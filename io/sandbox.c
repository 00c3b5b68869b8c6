/* The child process that reads untrusted files, and its pipe (sandbox.h). */
#include "sandbox.h"
#include "check.h"
#include "log.h"
#include "mtrain.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int sandbox_enabled = 1;

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

/* The child: reads, sends its return value, its user error and the result. */
static _Noreturn void child(const char *path, int fd, int (*reader)(void *),
			    void (*move)(void *, struct sandbox_pipe *),
			    void *arg)
{
	check_in_child();
	signal(SIGPIPE, SIG_DFL);
	struct sandbox_pipe p = {.fd = fd, .sending = 1};
	user_error_clear();
	/* A test's crash, as HDF5's on a forged file: MTRAIN_TEST_FAULT=reader
	 * on every file, reader:TEXT on the paths that hold TEXT. */
	const char *fault = getenv("MTRAIN_TEST_FAULT");
	if (fault && !strncmp(fault, "reader", 6) &&
	    (!fault[6] || (fault[6] == ':' && strstr(path, fault + 7))))
		raise(SIGSEGV);
	int rc = reader(arg);
	size_t len = strlen(user_error_text());
	sandbox_move(&p, &rc, sizeof(rc));
	sandbox_move(&p, &len, sizeof(len));
	sandbox_move(&p, (void *)user_error_text(), len);
	if (rc == 0)
		move(arg, &p);
	fflush(NULL);
	_exit(p.failed ? CHECK_CHILD_FAILED : 0);
}

int sandbox_read(const char *path, int (*reader)(void *arg),
		 void (*move)(void *arg, struct sandbox_pipe *p), void *arg)
{
	if (!sandbox_enabled)
		return reader(arg);
	int fds[2];
	if (pipe(fds))
		return reader(arg); /* out of descriptors: read as before */
	fflush(NULL); /* nothing buffered here is written twice by the child */
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return reader(arg);
	}
	if (pid == 0) {
		close(fds[0]);
		child(path, fds[1], reader, move, arg);
	}
	close(fds[1]);
	struct sandbox_pipe p = {.fd = fds[0]};
	int rc = RC_CORRUPT;
	size_t len = 0;
	char text[4096];
	sandbox_move(&p, &rc, sizeof(rc));
	sandbox_move(&p, &len, sizeof(len));
	if (len >= sizeof(text))
		p.failed = 1;
	sandbox_move(&p, text, p.failed ? 0 : len);
	text[p.failed ? 0 : len] = 0;
	if (!p.failed && rc == 0)
		move(arg, &p);
	close(fds[0]); /* a child with more to send dies of SIGPIPE: a crash */
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
