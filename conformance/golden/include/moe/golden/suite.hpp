#pragma once
// A suite is a folder of golden files; a run selects cases from it by name globs and by tier.
// Used by the generator (which cases to write) and the runner (which cases to run) alike.
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace moe::golden {

// Every *.h5 file in `dir`, sorted by name. Throws InputError if there is none.
std::vector<std::string> suite_files(const std::string& dir);

// Whether a run of tier `run_tier` (quick < ci < full) includes a case of tier `case_tier`.
bool tier_includes(const std::string& run_tier, const std::string& case_tier);

// Shell-style glob: '*' any run of characters, '?' one character; the whole text must match.
bool glob_match(const std::string& pattern, const std::string& text);

// Whether a case-name glob (--filter, an expectation's `case`) selects the case named `name` (as
// stored in its file): matched against that name and against it as reports print it (printable),
// so that a name copied out of a report or a repro line selects its case. The one matcher of case
// names, so that a filter and an expectation entry never disagree on which cases they mean.
bool case_glob_match(const std::string& pattern, const std::string& name);

// Whether glob `general` matches every text glob `specific` matches (sufficient, not necessary):
// `general` matched against `specific`'s own text, where a '?' may not stand for a '*' (which
// matches any run). So an expectation entry after `general` with both globs covered never applies.
bool glob_covers(const std::string& general, const std::string& specific);

// Shard `index` (1-based) of `count`: the files sorted by file name, every count-th one from the
// index-th on. Deterministic for a given suite, and every shard holds a case while count does not
// exceed the number of files. Throws InputError unless 1 <= index <= count.
std::vector<std::string> shard_files(std::vector<std::string> files, std::size_t index, std::size_t count);

// "I/N" as (I, N); throws InputError naming the text otherwise.
std::pair<std::size_t, std::size_t> parse_shard(const std::string& text);

// A golden file's identity: its case name (root attribute `case`, read alone) and the SHA-256 of
// its bytes. Result files name both, so that a result is never judged against another case.
struct CaseIdentity {
    std::string file;
    std::string case_name;
    std::string sha256;
};
// Throws FileError for a file that is not a golden file.
CaseIdentity identify_case(const std::string& file);
// identify_case's case name alone: all of it that HDF5 reads, so what a tool reads in a child
// first (child_process.hpp) when the file may crash the library; the hash reads plain bytes,
// and hashing a model-sized file there too had cost a second pass over its GBs.
std::string read_case_name(const std::string& file);

// The files of `files` whose case the `filters` (globs on the case name; none: every case) and
// the run tier `tier` ("" or a tier, as tier_includes) select, judged from the root attributes
// `case` and `tier` alone: nothing else of a file left out is read, so its size, checksums and
// datasets cannot fail a run that does not run it. A file whose attributes cannot be read stays
// in, for the full read to report. Order kept. With `names`, every file's attributes are read
// (filters and tier or not) and names[i] is kept[i]'s case name as reports print it (printable),
// empty where it could not be read. `expert_type` (a spec name, "GEMM3_SWIGLU"; "" = any) keeps
// only the files whose root attribute `expert_type` is that one (one without it, or with an
// unknown type, stays in: the full read reports it).
std::vector<std::string> select_files(const std::vector<std::string>& files, const std::vector<std::string>& filters,
                                      const std::string& tier, std::vector<std::string>* names = nullptr,
                                      const std::string& expert_type = "");

// The first case name held by two of `files` (names[i]: files[i]'s, as select_files gives them;
// "" unread, skipped), as a message naming both files; nullopt when none. A run meeting both
// refuses them, but shards met one each, every shard passed, and their merged reports held two
// results under one name: so moe-conform and the Python door check a sharded selection whole,
// before it is cut.
std::optional<std::string> repeated_case_name(const std::vector<std::string>& files,
                                              const std::vector<std::string>& names);

}  // namespace moe::golden
