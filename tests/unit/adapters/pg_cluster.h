// A throwaway PostgreSQL cluster for the store's tests: initdb + pg_ctl in a temporary
// directory, listening only on a Unix socket in that directory (listen_addresses=''), trust
// authentication for its one superuser `phalanx`. Started on first use, one per test process
// (ctest runs every Postgres/* test of store_test in one process: tests/CMakeLists.txt), and
// torn down always: a watchdog process forked before the server starts waits on a pipe whose
// write end only this process holds, and when it reads EOF -- the test process exited, normally
// or killed -- it stops the server (pg_ctl stop -m immediate) and removes the directory.
//
// PostgreSQL refuses to run as root: as root, initdb, pg_ctl and the server run as the user
// `nobody` (fork, setgid/setuid, exec; the directory is chowned to it).
//
// Where the binaries are: $PHALANX_PG_BINDIR, else the newest /usr/lib/postgresql/*/bin.
// Each test gets its own schema (NewDsn): a connection string whose search_path is a fresh,
// empty schema, so tests never see each other's tables and no database is created per test.
// Thread-safety: Get() and NewDsn() from the test's main thread.
#pragma once

#include <string>

namespace phalanx::store::testing {

class PgCluster {
 public:
  // The cluster, started at the first call; null (and `why` set) when it cannot start.
  static PgCluster* Get(std::string* why);
  // Stops the cluster if one was started (also done by the watchdog at exit).
  static void Shutdown();

  // A connection string to a fresh, empty schema.
  std::string NewDsn();
  // The connection string of the cluster's `postgres` database, default schema.
  std::string AdminDsn() const;
  const std::string& dir() const { return dir_; }

 private:
  PgCluster() = default;
  bool Start(std::string* why);
  void Stop();
  std::string dir_, bindir_;
  int watchdog_fd_ = -1;
  int watchdog_pid_ = -1;
  int schemas_ = 0;
};

}  // namespace phalanx::store::testing
