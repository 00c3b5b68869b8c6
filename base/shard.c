/* ZeRO-1's split of shard.h. */
#include "shard.h"

void shard_plan(struct shard *s, size_t total, int rank, int ranks)
{
	size_t per = (total + (size_t)ranks - 1) / (size_t)ranks;
	s->total = total;
	s->ranks = ranks;
	s->each = ranks == 1 ? total : (per + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN;
	s->first = (size_t)rank * s->each;
	s->len = s->first >= total ? 0 : total - s->first < s->each ? total - s->first : s->each;
	if (s->first > total)
		s->first = total;
}
