#include "adapters/store/db.h"

namespace phalanx::store {

Result<std::string> Db::QueryText(std::string_view sql) {
  PHX_ASSIGN_OR_RETURN(auto stmt, Prepare(sql));
  PHX_ASSIGN_OR_RETURN(auto row, stmt.Step());
  if (!row) return Fail(path(), "'" + std::string(sql) + "' returned no row");
  return std::string(stmt.Text(0));
}

Result<int64_t> Db::QueryInt(std::string_view sql) {
  PHX_ASSIGN_OR_RETURN(auto stmt, Prepare(sql));
  PHX_ASSIGN_OR_RETURN(auto row, stmt.Step());
  if (!row) return Fail(path(), "'" + std::string(sql) + "' returned no row");
  return stmt.Int(0);
}

}  // namespace phalanx::store
