/* The default data of default_data.h. */
#include "default_data.h"
#include "dataset.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FASHION_DIR "/usr/share/datasets/fashion-mnist"
#define JARGON_TEXT "/usr/share/doc/jargon-text/jargon.txt.gz"

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* Rank 0's part: imports each missing cache file. */
static void import_missing(const char *dir, char out[2][PATH_LEN])
{
	const char *part[2] = {"train", "t10k"};
	for (int i = 0; i < 2 && !user_error_pending(); i++) {
		if (file_exists(out[i]))
			continue;
		char img[PATH_LEN], lab[PATH_LEN];
		snprintf(img, PATH_LEN, FASHION_DIR "/%s-images-idx3-ubyte.gz", part[i]);
		snprintf(lab, PATH_LEN, FASHION_DIR "/%s-labels-idx1-ubyte.gz", part[i]);
		if (!file_exists(img)) {
			user_error("no --data given and %s is missing: install Debian's "
				   "dataset-fashion-mnist package or pass --data FILE", img);
			break;
		}
		if (mkdir(dir, 0777) && errno != EEXIST) {
			user_error("%s: cannot create the data cache folder: %s", dir, strerror(errno));
			break;
		}
		log_info("importing %s into %s (once)", img, out[i]);
		dataset_import_idx(img, lab, out[i]);
	}
}

/* Rank 0's part for --dataset jargon: the text's bytes as tokens, unless
 * cached. */
static void import_jargon(const char *dir, const char *out)
{
	if (file_exists(out))
		return;
	char *text[1] = {JARGON_TEXT};
	if (!file_exists(text[0]))
		user_error("--dataset jargon and %s is missing: install Debian's jargon-text "
			   "package or pass --data FILE", text[0]);
	else if (mkdir(dir, 0777) && errno != EEXIST)
		user_error("%s: cannot create the data cache folder: %s", dir, strerror(errno));
	else
		dataset_import_text(text, 1, 0.1, 0, out);
}

int default_data_prepare(struct config *cfg, struct comm *c)
{
	if (cfg->data[0])
		return 0;
	const char *dir = getenv("MTRAIN_DATA_DIR") ? getenv("MTRAIN_DATA_DIR") : "data";
	if (cfg->dataset == DATASET_JARGON) {
		char out[PATH_LEN];
		snprintf(out, PATH_LEN, "%s/jargon-bytes.h5", dir);
		if (c->rank == 0)
			import_jargon(dir, out);
		if (comm_user_errors(c))
			return -1;
		snprintf(cfg->data, PATH_LEN, "%s", out); /* evaluated on its validation split */
		return 0;
	}
	const char *name[2] = {"train", "test"};
	char out[2][PATH_LEN];
	for (int i = 0; i < 2; i++)
		snprintf(out[i], PATH_LEN, "%s/fashion-mnist-%s.h5", dir, name[i]);
	if (c->rank == 0)
		import_missing(dir, out);
	if (comm_user_errors(c))
		return -1;
	snprintf(cfg->data, PATH_LEN, "%s", out[0]);
	if (!cfg->eval_data[0])
		snprintf(cfg->eval_data, PATH_LEN, "%s", out[1]);
	return 0;
}
