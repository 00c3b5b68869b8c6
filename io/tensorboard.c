/* The event files of tensorboard.h. A record is the payload's length
 * (uint64, little-endian), its masked CRC-32C, the payload, and the
 * payload's masked CRC-32C. The payload is an Event message:
 *   Event      { double wall_time = 1; int64 step = 2; string file_version = 3;
 *                Summary summary = 5; SessionLog session_log = 7; }
 *   Summary    { repeated Value value = 1; }
 *   Value      { string tag = 1; float simple_value = 2; }
 *   SessionLog { Status status = 1; }   START = 1
 * encoded by hand: nothing else of protocol buffers is needed. */
#include "tensorboard.h"
#include "log.h"
#include "mtrain.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static FILE *g_file;
static char g_path[FILE_PATH_LEN];

/* CRC-32C (Castagnoli), reflected, as TFRecord frames use it. */
static uint32_t crc32c(const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
			table[i] = c;
		}
	uint32_t c = 0xffffffffu;
	while (n--)
		c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

static uint32_t masked_crc(const uint8_t *p, size_t n)
{
	uint32_t c = crc32c(p, n);
	return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* A message under construction. */
struct pb {
	uint8_t b[512];
	size_t n;
};

static void pb_varint(struct pb *m, uint64_t v)
{
	do {
		m->b[m->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void pb_bytes(struct pb *m, int field, const void *p, size_t n)
{
	pb_varint(m, (uint64_t)field << 3 | 2);
	pb_varint(m, n);
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void pb_fixed(struct pb *m, int field, const void *p, size_t n)
{
	pb_varint(m, (uint64_t)field << 3 | (n == 8 ? 1 : 5));
	memcpy(m->b + m->n, p, n); /* little-endian, as protocol buffers are */
	m->n += n;
}

/* An Event at step with the wall time of now; body (Event fields 3 and
 * up) appended after. */
static void event_start(struct pb *e, long step)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double wall = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
	e->n = 0;
	pb_fixed(e, 1, &wall, 8);
	pb_varint(e, 2 << 3);
	pb_varint(e, (uint64_t)step);
}

/* A failed write (a full disk) ends the file with one line: training goes
 * on, as it would without TensorBoard. */
static void say_lost(void)
{
	log_error("--tensorboard: cannot write %s: %s; no more TensorBoard scalars this run",
		  g_path, strerror(errno ? errno : EIO));
}

static void give_up(void)
{
	say_lost();
	fclose(g_file);
	g_file = NULL;
}

static void write_record(const struct pb *e)
{
	uint64_t len = e->n;
	uint32_t len_crc = masked_crc((const uint8_t *)&len, 8), crc = masked_crc(e->b, e->n);
	errno = 0;
	if (fwrite(&len, 8, 1, g_file) != 1 || fwrite(&len_crc, 4, 1, g_file) != 1 ||
	    fwrite(e->b, 1, e->n, g_file) != e->n || fwrite(&crc, 4, 1, g_file) != 1)
		give_up();
}

int tensorboard_open(const char *dir, long start)
{
	if (!dir || !dir[0] || log_rank() != 0)
		return 0;
	if (mkdir(dir, 0777) && errno != EEXIST)
		return user_error("--tensorboard %s: cannot create: %s", dir, strerror(errno));
	char host[64] = "host";
	gethostname(host, sizeof(host) - 1);
	snprintf(g_path, sizeof(g_path), "%s/events.out.tfevents.%ld.%s.%ld.mtrain", dir,
		 (long)time(NULL), host, (long)getpid());
	g_file = fopen(g_path, "wb");
	if (!g_file)
		return user_error("--tensorboard %s: cannot create %s: %s", dir, g_path,
				  strerror(errno));
	struct pb e;
	event_start(&e, start);
	pb_bytes(&e, 3, "brain.Event:2", 13);
	write_record(&e);
	/* SessionLog START at the first step this run logs: readers drop what
	 * earlier files of the folder hold from that step on (a resumed run's
	 * repeated steps, or a whole earlier run started afresh). */
	const uint8_t session[2] = {1 << 3, 1};
	event_start(&e, start + 1);
	pb_bytes(&e, 7, session, sizeof(session));
	if (g_file)
		write_record(&e);
	tensorboard_flush();
	return 0;
}

void tensorboard_scalar(const char *tag, long step, double value)
{
	if (!g_file)
		return;
	struct pb v = {.n = 0}, s = {.n = 0}, e;
	float f = (float)value;
	pb_bytes(&v, 1, tag, strnlen(tag, 200));
	pb_fixed(&v, 2, &f, 4);
	pb_bytes(&s, 1, v.b, v.n);
	event_start(&e, step);
	pb_bytes(&e, 5, s.b, s.n);
	write_record(&e);
}

void tensorboard_flush(void)
{
	errno = 0;
	if (g_file && fflush(g_file))
		give_up();
}

void tensorboard_close(void)
{
	errno = 0;
	if (g_file && fclose(g_file))
		say_lost();
	g_file = NULL;
}
