// The tuning file: what `baton-perf --calibrate` measured, in a form a person can read and edit.
//
//   # comment lines (the calibration writes where, when and how it measured)
//   # path algorithm protocol base_us hop_us busbw_GBs
//   shm Ring LL 0.00 1.52 1.85
//   shm Ring LL128 ...
//   direct Ring Simple ...
//   # path algorithm protocol corr c0 .. c22   (optional: measured/model per size bucket, 64 B .. 256 MiB)
//   shm Ring LL corr 1.02 0.97 ...
//   # alltoall nranks bruck_bytes bytes     (baton-perf alltoall --calibrate, lesson 12)
//   alltoall 8 bruck_bytes 65536
// path: shm (ranks reach each other through FIFO copies), direct (ranks of one process reading
// and writing each other's buffers), oversub (FIFO copies with more ranks than cores) or gpu (CUDA
// kernels on device buffers). Entries the file does not name keep their built-in values.
#include <strings.h>

#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "misc/debug.h"
#include "misc/param.h"
#include "tuner/tuner.h"

namespace baton {

std::string tuningFilePath() {
  std::string p = envStr("BATON_TUNING_FILE");
  if (!p.empty()) return p;
  std::string cache = envStr("XDG_CACHE_HOME");
  if (cache.empty()) {
    const std::string home = envStr("HOME");
    if (home.empty()) return "";
    cache = home + "/.cache";
  }
  return cache + "/baton/tuning.txt";
}

ncclResult_t loadTuningFile(const std::string& path, TuningModel* model) {
  std::ifstream file(path);
  if (!file) return batonError(ncclSystemError, "tuning file %s: cannot open (%s)", path.c_str(), strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  return parseTuningText(text.str(), path, model);
}

ncclResult_t parseTuningText(const std::string& text, const std::string& path, TuningModel* model) {
  std::istringstream in(text);
  TuningModel m = *model;
  std::string line;
  int lineNo = 0, entries = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ss(line);
    std::string pathWord, algo, proto;
    if (!(ss >> pathWord)) continue;  // blank or comment
    if (strcasecmp(pathWord.c_str(), "alltoall") == 0) {
      long long nRanks = 0, bytes = -1;
      std::string key;
      if (!(ss >> nRanks >> key >> bytes) || key != "bruck_bytes" || nRanks < 2 || nRanks > (1 << 20) || bytes < 0)
        return batonError(ncclInvalidArgument,
                          "tuning file %s line %d: expected 'alltoall nranks bruck_bytes bytes' (nranks >= 2, bytes "
                          ">= 0)",
                          path.c_str(), lineNo);
      if (!setAlltoAllCalibration(&m, (int)nRanks, (uint64_t)bytes))
        return batonError(ncclInvalidArgument, "tuning file %s line %d: more than %d alltoall entries", path.c_str(),
                          lineNo, kMaxAlltoAllCalibrations);
      ++entries;
      continue;
    }
    int kind = -1;
    for (int k = 0; k < kNumPaths; ++k)
      if (strcasecmp(pathWord.c_str(), tuningPathName(k)) == 0) kind = k;
    if (kind < 0)
      return batonError(ncclInvalidArgument,
                        "tuning file %s line %d: unknown path '%s' (expected shm, direct, oversub or gpu)",
                        path.c_str(), lineNo, pathWord.c_str());
    if (!(ss >> algo))
      return batonError(ncclInvalidArgument, "tuning file %s line %d: expected an algorithm after '%s'", path.c_str(),
                        lineNo, pathWord.c_str());
    if (!(ss >> proto))
      return batonError(ncclInvalidArgument, "tuning file %s line %d: expected a protocol after '%s'", path.c_str(),
                        lineNo, algo.c_str());
    int a = -1, p = -1;
    for (const CollAlgo i : kTunedAlgos)
      if (strcasecmp(algo.c_str(), algoName(i)) == 0) a = i;
    for (int i = 0; i < kNumProtos; ++i)
      if (strcasecmp(proto.c_str(), protoName(i)) == 0) p = i;
    if (a < 0)
      return batonError(ncclInvalidArgument, "tuning file %s line %d: unknown algorithm '%s'", path.c_str(), lineNo,
                        algo.c_str());
    if (p < 0)
      return batonError(ncclInvalidArgument, "tuning file %s line %d: unknown protocol '%s'", path.c_str(), lineNo,
                        proto.c_str());
    if (ss >> std::ws && ss.peek() == 'c') {  // "corr" line
      std::string word;
      ss >> word;
      float corr[kCorrBuckets];
      for (int b = 0; b < kCorrBuckets; ++b)
        if (!(ss >> corr[b]) || !(corr[b] > 0.01f && corr[b] < 100.0f))
          return batonError(
              ncclInvalidArgument,
              "tuning file %s line %d: 'corr' needs %d factors in (0.01, 100); factor %d is missing or out "
              "of range",
              path.c_str(), lineNo, kCorrBuckets, b);
      memcpy(m.cost[kind][a][p].corr, corr, sizeof corr);
      continue;
    }
    double base, hop, bw;
    if (!(ss >> base >> hop >> bw))
      return batonError(ncclInvalidArgument,
                        "tuning file %s line %d: expected 'algorithm protocol base_us hop_us busbw_GBs'", path.c_str(),
                        lineNo);
    if (!(base >= 0 && base < 1e6 && hop >= 0 && hop < 1e6 && bw >= 0 && bw < 1e5))
      return batonError(ncclInvalidArgument,
                        "tuning file %s line %d: values out of range (base_us %g, hop_us %g, busbw_GBs %g)",
                        path.c_str(), lineNo, base, hop, bw);
    m.cost[kind][a][p].baseUs = (float)base;
    m.cost[kind][a][p].hopUs = (float)hop;
    m.cost[kind][a][p].busBwGBs = (float)bw;
    ++entries;
  }
  if (entries == 0) return batonError(ncclInvalidArgument, "tuning file %s: no entries", path.c_str());
  snprintf(m.source, sizeof m.source, "%s", path.c_str());
  *model = m;
  return ncclSuccess;
}

ncclResult_t writeTuningFile(const std::string& path, const TuningModel& model, const std::string& comment) {
  // Create the parent directory (one level: ~/.cache/baton) if needed.
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) mkdir(path.substr(0, slash).c_str(), 0755);
  const std::string tmp = path + ".tmp";
  FILE* f = fopen(tmp.c_str(), "w");
  if (!f) return batonError(ncclSystemError, "tuning file %s: cannot write (%s)", tmp.c_str(), strerror(errno));
  fprintf(f, "# baton tuning file (read by libnccl from BATON_TUNING_FILE or %s)\n", "~/.cache/baton/tuning.txt");
  std::istringstream cs(comment);
  std::string line;
  while (std::getline(cs, line)) fprintf(f, "# %s\n", line.c_str());
  fprintf(f, "# path algorithm protocol base_us hop_us busbw_GBs\n");
  for (int k = 0; k < kNumPaths; ++k)
    for (const CollAlgo a : kTunedAlgos)
      for (int p = 0; p < kNumProtos; ++p) {
        const AlgoProtoCost& c = model.cost[k][a][p];
        fprintf(f, "%s %s %s %.3f %.3f %.3f\n", tuningPathName(k), algoName(a), protoName(p), c.baseUs, c.hopUs,
                c.busBwGBs);
      }
  fprintf(f, "# path algorithm protocol corr: measured / model per size bucket (64 B, 128 B, ... 256 MiB)\n");
  for (int k = 0; k < kNumPaths; ++k)
    for (const CollAlgo a : kTunedAlgos)
      for (int p = 0; p < kNumProtos; ++p) {
        fprintf(f, "%s %s %s corr", tuningPathName(k), algoName(a), protoName(p));
        for (int b = 0; b < kCorrBuckets; ++b) fprintf(f, " %.3f", model.cost[k][a][p].corr[b]);
        fprintf(f, "\n");
      }
  if (model.nAlltoAll) {
    fprintf(f, "# alltoall nranks bruck_bytes bytes: across hosts, auto sends with Bruck up to this whole buffer\n");
    for (int i = 0; i < model.nAlltoAll; ++i)
      fprintf(f, "alltoall %d bruck_bytes %llu\n", model.alltoall[i].nRanks,
              (unsigned long long)model.alltoall[i].bruckBytes);
  }
  const bool ok = fclose(f) == 0;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0)
    return batonError(ncclSystemError, "tuning file %s: cannot write (%s)", path.c_str(), strerror(errno));
  return ncclSuccess;
}

TuningModel tuningModelToRewrite(const std::string& path) {
  TuningModel m = defaultTuningModel(), existing = m;
  const bool quiet = quietErrors();
  quietErrors() = true;
  if (access(path.c_str(), R_OK) == 0 && loadTuningFile(path, &existing) == ncclSuccess) m = existing;
  quietErrors() = quiet;
  return m;
}

bool setAlltoAllCalibration(TuningModel* m, int nRanks, uint64_t bruckBytes) {
  for (int i = 0; i < m->nAlltoAll; ++i)
    if (m->alltoall[i].nRanks == nRanks) return m->alltoall[i].bruckBytes = bruckBytes, true;
  if (m->nAlltoAll == kMaxAlltoAllCalibrations) return false;
  m->alltoall[m->nAlltoAll++] = {nRanks, bruckBytes};
  return true;
}

const AlltoAllCalibration* alltoallCalibrationFor(const TuningModel& m, int nRanks) {
  const AlltoAllCalibration* best = nullptr;
  for (int i = 0; i < m.nAlltoAll; ++i) {
    const AlltoAllCalibration& c = m.alltoall[i];
    const int d = std::abs(c.nRanks - nRanks), bd = best ? std::abs(best->nRanks - nRanks) : 0;
    if (!best || d < bd || (d == bd && c.nRanks < best->nRanks)) best = &c;
  }
  return best;
}

TuningModel initialTuningModel() {
  TuningModel m = defaultTuningModel();
  const std::string path = tuningFilePath();
  if (path.empty() || path == "none") return m;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (!envStr("BATON_TUNING_FILE").empty())
      BATON_WARN("BATON_TUNING_FILE=%s does not exist; using the built-in model", path.c_str());
    return m;
  }
  if (loadTuningFile(path, &m) != ncclSuccess) {
    BATON_WARN("ignoring tuning file %s (see the message above); using the built-in model", path.c_str());
    return defaultTuningModel();
  }
  return m;
}

}  // namespace baton
