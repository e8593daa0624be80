// Greedy decoding with llama.cpp, for bench/peer-llama.ts: plain (one target forward per token) or
// a chain (a draft proposes N tokens one at a time, the target verifies them in one forward and
// keeps the longest prefix it agrees with, plus its own next token). Token ids in, token ids out,
// so both engines see exactly the same inputs; only decoding is timed (prefill is not).
//
//   llama-greedy --model T.gguf [--draft D.gguf --chain N] --threads N --new N --prompts FILE [--eos ID,ID] [--repeat N]
//
// FILE: one prompt per line, token ids separated by spaces. A prompt ends at --new tokens or at the
// first --eos id (emitted), as a user's run does. --repeat N decodes the whole list N times in the
// one process (the first pass shows what a fresh process costs). Prints one line per prompt decoded:
//   <decode ms> <generated ids…>
#include "llama.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <set>
#include <string>
#include <vector>

namespace {

struct Args {
  std::string model, draft, prompts;
  int chain = 0, threads = 1, newTokens = 64, repeat = 1;
  std::set<int> eos;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "llama-greedy: %s\n", what.c_str());
  std::exit(1);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i++) {
    std::string k = argv[i];
    if (i + 1 >= argc) fail("missing value for " + k);
    std::string v = argv[++i];
    if (k == "--model") a.model = v;
    else if (k == "--draft") a.draft = v;
    else if (k == "--prompts") a.prompts = v;
    else if (k == "--chain") a.chain = std::atoi(v.c_str());
    else if (k == "--threads") a.threads = std::atoi(v.c_str());
    else if (k == "--new") a.newTokens = std::atoi(v.c_str());
    else if (k == "--repeat") a.repeat = std::atoi(v.c_str());
    else if (k == "--eos") {
      std::istringstream ss(v);
      for (std::string id; std::getline(ss, id, ',');) a.eos.insert(std::atoi(id.c_str()));
    }
    else fail("unknown option " + k);
  }
  if (a.model.empty() || a.prompts.empty()) fail("--model and --prompts are required");
  if (!a.draft.empty() && a.chain < 1) fail("--draft needs --chain N >= 1");
  if (a.repeat < 1) fail("--repeat needs N >= 1");
  return a;
}

struct Model {
  llama_model* model = nullptr;
  llama_context* ctx = nullptr;
  int vocab = 0;
};

Model load(const std::string& path, int threads, int ctxRows, int batchRows) {
  llama_model_params mp = llama_model_default_params();
  Model m;
  m.model = llama_model_load_from_file(path.c_str(), mp);
  if (!m.model) fail("cannot load " + path);
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = ctxRows;
  cp.n_batch = batchRows;
  cp.n_ubatch = batchRows;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.no_perf = true;
  m.ctx = llama_init_from_model(m.model, cp);
  if (!m.ctx) fail("cannot create a context for " + path);
  m.vocab = llama_vocab_n_tokens(llama_model_get_vocab(m.model));
  return m;
}

// Argmax of a row of logits; ties go to the lowest id (as onnxruntime's ArgMax).
int argmax(const float* logits, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (logits[i] > logits[best]) best = i;
  return best;
}

// Decodes `tokens` at positions from `pos` in sequence 0, logits for every row when `allLogits`, else the last.
void decode(Model& m, const std::vector<llama_token>& tokens, int pos, bool allLogits) {
  llama_batch b = llama_batch_init((int)tokens.size(), 0, 1);
  for (size_t i = 0; i < tokens.size(); i++) {
    b.token[i] = tokens[i];
    b.pos[i] = pos + (int)i;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = allLogits || i + 1 == tokens.size();
  }
  b.n_tokens = (int)tokens.size();
  if (llama_decode(m.ctx, b) != 0) fail("llama_decode failed");
  llama_batch_free(b);
}

void clear(Model& m) { llama_memory_seq_rm(llama_get_memory(m.ctx), 0, -1, -1); }
void dropFrom(Model& m, int pos) { llama_memory_seq_rm(llama_get_memory(m.ctx), 0, pos, -1); }

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  std::vector<std::vector<llama_token>> prompts;
  std::ifstream in(a.prompts);
  if (!in) fail("cannot read " + a.prompts);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ss(line);
    std::vector<llama_token> p;
    for (int id; ss >> id;) p.push_back(id);
    if (!p.empty()) prompts.push_back(p);
  }
  size_t longest = 0;
  for (auto& p : prompts) longest = std::max(longest, p.size());
  const int ctxRows = (int)longest + a.newTokens + a.chain + 16;
  const int batchRows = std::max<int>((int)longest, a.chain + 1);

  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  Model target = load(a.model, a.threads, ctxRows, batchRows);
  Model draft;
  if (!a.draft.empty()) draft = load(a.draft, 1, ctxRows, batchRows);

  for (int pass = 0; pass < a.repeat; pass++)
  for (auto& prompt : prompts) {
    clear(target);
    if (draft.ctx) clear(draft);
    decode(target, prompt, 0, false);
    llama_token next = argmax(llama_get_logits_ith(target.ctx, -1), target.vocab);
    std::vector<llama_token> out{next};
    auto ended = [&]() { return (int)out.size() >= a.newTokens || a.eos.count(out.back()) > 0; };
    // Draft: the prompt minus its last token is prefilled here (untimed); the rest it catches up on.
    int draftPast = 0;
    std::vector<llama_token> history(prompt);  // every token the target has committed, `next` not yet among them
    if (draft.ctx && prompt.size() > 1) {
      decode(draft, std::vector<llama_token>(prompt.begin(), prompt.end() - 1), 0, false);
      draftPast = (int)prompt.size() - 1;
    }
    int past = (int)prompt.size();
    auto t0 = std::chrono::steady_clock::now();
    while (!ended()) {
      if (!draft.ctx) {
        decode(target, {next}, past, false);
        past++;
        next = argmax(llama_get_logits_ith(target.ctx, -1), target.vocab);
        out.push_back(next);
        continue;
      }
      // Draft a chain: catch up on the committed tokens it has not seen, then one token at a time.
      history.push_back(next);
      std::vector<llama_token> catchUp(history.begin() + draftPast, history.end());
      decode(draft, catchUp, draftPast, false);
      draftPast = (int)history.size();
      std::vector<llama_token> guesses;
      llama_token g = argmax(llama_get_logits_ith(draft.ctx, -1), draft.vocab);
      for (int i = 0; i < a.chain; i++) {
        guesses.push_back(g);
        if (i + 1 == a.chain) break;
        decode(draft, {g}, draftPast + i, false);
        g = argmax(llama_get_logits_ith(draft.ctx, -1), draft.vocab);
      }
      // Verify: next and the guesses in one target forward.
      std::vector<llama_token> verify{next};
      verify.insert(verify.end(), guesses.begin(), guesses.end());
      decode(target, verify, past, true);
      int accepted = 0;
      llama_token own = argmax(llama_get_logits_ith(target.ctx, 0), target.vocab);
      while (accepted < a.chain && own == guesses[accepted]) {
        accepted++;
        own = argmax(llama_get_logits_ith(target.ctx, accepted), target.vocab);
      }
      for (int i = 0; i < accepted && !ended(); i++) out.push_back(guesses[i]);
      if (!ended()) out.push_back(own);
      // Keep next and the accepted guesses in both caches; drop the rest.
      past += 1 + accepted;
      dropFrom(target, past);
      history.insert(history.end(), guesses.begin(), guesses.begin() + accepted);
      int draftKept = std::min(draftPast + accepted, (int)history.size());
      // The draft stored next and guesses[0 .. chain-2]; the accepted ones it stored stay.
      draftKept = std::min(draftKept, draftPast + a.chain - 1);
      dropFrom(draft, draftKept);
      draftPast = draftKept;
      next = own;
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%.3f", ms);
    for (llama_token t : out) std::printf(" %d", t);
    std::printf("\n");
    std::fflush(stdout);
  }
  llama_free(target.ctx);
  llama_model_free(target.model);
  if (draft.ctx) {
    llama_free(draft.ctx);
    llama_model_free(draft.model);
  }
  llama_backend_free();
  return 0;
}
