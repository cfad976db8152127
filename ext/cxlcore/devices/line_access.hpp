// Where a device engine (the CXL-NIC's atomic engine) sends its line
// accesses: the device's coherent cache. The standalone engine's is the
// Accelerator; inside gem5 it is gem5's own cache, reached by packets.
#pragma once

#include "cxlcore/kernel/txn.hpp"

namespace cxlcore {

class LineAccess {
  public:
    // Performs the access and tells its client (notifyDone) when it is done.
    virtual void access(Txn* a) = 0;

  protected:
    ~LineAccess() = default;
};

}  // namespace cxlcore
