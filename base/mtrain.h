/* Constants every module of mtrain shares. */
#pragma once

/* A path given as an option (--data, --ckpt-dir, ...), with its NUL. */
#define PATH_LEN 1024
/* A path mtrain composes: a folder of up to PATH_LEN plus a file name. */
#define FILE_PATH_LEN (PATH_LEN + 128)

/* Every variable of the parameter registry, and every rank's shard of
 * them under ZeRO-1, starts at a multiple of this many elements (vector
 * alignment). */
#define PARAM_ALIGN 16

/* What a function that can meet bad input returns. */
enum mt_rc {
	RC_OK = 0,
	RC_USER = -1,    /* a user error is recorded (user_error) */
	RC_CORRUPT = -2, /* a file cannot be opened or fails its checks; user error recorded */
};

/* The process exit status. */
enum mt_exit {
	EXIT_OK = 0,
	EXIT_FAIL = 1, /* a system error: a write failed, a rank died */
	EXIT_USER = 2, /* bad input: flags, config, data or checkpoint */
};
