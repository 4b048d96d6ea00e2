import { beforeEach } from "vitest";
import { failureReport } from "./suite.js";

// When a test fails, show why the suite refused what it refused and what the services said.
beforeEach(({ onTestFailed }) => {
  onTestFailed(() => {
    const report = failureReport();
    if (report) console.error(report);
  });
});
