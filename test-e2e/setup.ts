import { beforeEach } from "vitest";
import { failureReport } from "./suite.js";

// The services of a test run without --enable-source-maps (about a fifth of each one's start-up
// CPU, and a cost per stack trace after): SVC_SOURCE_MAPS=1 npm test -- <file> for the sources'
// lines in a failure's stack traces (tools/devstack/src/service-process.ts).
process.env.SVC_SOURCE_MAPS ??= "0";

// When a test fails, show why the suite refused what it refused and what the services said.
beforeEach(({ onTestFailed }) => {
  onTestFailed(() => {
    const report = failureReport();
    if (report) console.error(report);
  });
});
