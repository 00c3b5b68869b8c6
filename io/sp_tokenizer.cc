// The C API of sp_tokenizer.h over SentencePiece's C++ one.
#include "sp_tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace {

// The text's non-empty lines, in order, as SentencePiece's sentences.
class Lines : public sentencepiece::SentenceIterator {
      public:
	Lines(const char *text, size_t len) : text_(text), len_(len) { Next(); }
	bool done() const override { return done_; }
	void Next() override
	{
		while (at_ < len_) {
			const char *nl = static_cast<const char *>(memchr(text_ + at_, '\n', len_ - at_));
			size_t end = nl ? static_cast<size_t>(nl - text_) : len_;
			line_.assign(text_ + at_, end - at_);
			at_ = end + 1;
			if (!line_.empty())
				return;
		}
		done_ = true;
	}
	const std::string &value() const override { return line_; }
	sentencepiece::util::Status status() const override { return {}; }

      private:
	const char *text_;
	size_t len_, at_ = 0;
	std::string line_;
	bool done_ = false;
};

// SentencePiece's reason without its source location: after the last "] ".
void say(const sentencepiece::util::Status &s, char *why, size_t len)
{
	std::string m = s.ToString();
	size_t at = m.rfind("] ");
	snprintf(why, len, "%s", at == std::string::npos ? m.c_str() : m.c_str() + at + 2);
	char *nl = strchr(why, '\n');
	if (nl)
		*nl = 0;
}

} // namespace

struct sp_tokenizer {
	sentencepiece::SentencePieceProcessor sp;
};

extern "C" int sp_train_bpe(const char *text, size_t len, int vocab, void **model,
			    size_t *model_len, char *why, size_t why_len)
{
	std::string args = "--model_type=bpe --vocab_size=" + std::to_string(vocab) +
			   " --character_coverage=1.0 --byte_fallback=true"
			   " --normalization_rule_name=identity --add_dummy_prefix=false"
			   " --remove_extra_whitespaces=false --allow_whitespace_only_pieces=true"
			   " --num_threads=1 --input_sentence_size=0 --shuffle_input_sentence=false"
			   " --max_sentence_length=1000000 --minloglevel=2";
	Lines lines(text, len);
	std::string out;
	// Its own log of the command it runs goes to stderr: not ours to show.
	fflush(stderr);
	int saved = dup(2), null = open("/dev/null", 1);
	if (null >= 0)
		dup2(null, 2);
	sentencepiece::util::Status s = sentencepiece::SentencePieceTrainer::Train(args, &lines, &out);
	if (saved >= 0)
		dup2(saved, 2), close(saved);
	if (null >= 0)
		close(null);
	if (!s.ok()) {
		say(s, why, why_len);
		return -1;
	}
	*model = malloc(out.size());
	memcpy(*model, out.data(), out.size());
	*model_len = out.size();
	return 0;
}

extern "C" struct sp_tokenizer *sp_open(const void *model, size_t len, char *why, size_t why_len)
{
	sp_tokenizer *t = new sp_tokenizer;
	sentencepiece::util::Status s =
		t->sp.LoadFromSerializedProto(std::string(static_cast<const char *>(model), len));
	if (!s.ok()) {
		say(s, why, why_len);
		delete t;
		return nullptr;
	}
	return t;
}

extern "C" void sp_close(struct sp_tokenizer *t) { delete t; }

extern "C" int sp_vocab(const struct sp_tokenizer *t) { return t->sp.GetPieceSize(); }

extern "C" int sp_encode(const struct sp_tokenizer *t, const char *text, size_t len,
			 int32_t **ids, size_t *n)
{
	std::vector<int> v;
	if (!t->sp.Encode(std::string(text, len), &v).ok())
		return -1;
	*ids = static_cast<int32_t *>(malloc(sizeof(int32_t) * (v.size() ? v.size() : 1)));
	for (size_t i = 0; i < v.size(); i++)
		(*ids)[i] = v[i];
	*n = v.size();
	return 0;
}

extern "C" char *sp_decode(const struct sp_tokenizer *t, const int32_t *ids, size_t n,
			   size_t *len)
{
	std::vector<int> v(ids, ids + n);
	for (int id : v)
		if (id < 0 || id >= t->sp.GetPieceSize())
			return nullptr;
	std::string text;
	if (!t->sp.Decode(v, &text).ok())
		return nullptr;
	char *out = static_cast<char *>(malloc(text.size() + 1));
	memcpy(out, text.data(), text.size());
	out[text.size()] = 0;
	*len = text.size();
	return out;
}
