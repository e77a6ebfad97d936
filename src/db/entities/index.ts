import { ApiKey } from "./api-key.js";
import { Inbox } from "./inbox.js";
import { Organization } from "./organization.js";
import { RequestWindow } from "./request-window.js";

export { ApiKey, Inbox, Organization, RequestWindow };
export const entities = [Organization, ApiKey, Inbox, RequestWindow];
